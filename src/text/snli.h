#pragma once
// SNLI 1.0 JSON-lines reader (gzip or plain). Pairs whose gold_label is "-" (no annotator
// majority) are skipped and counted, by convention.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace grassaudit {

constexpr int32_t kEntailment = 0;
constexpr int32_t kNeutral = 1;
constexpr int32_t kContradiction = 2;
constexpr int kNumSnliLabels = 3;

struct SnliPair {
  std::string sentence1;  // premise
  std::string sentence2;  // hypothesis
  int32_t label = 0;      // kEntailment, kNeutral or kContradiction
};

struct SnliData {
  std::vector<SnliPair> pairs;
  int64_t lines = 0;              // records read, skipped ones included
  int64_t skipped_no_label = 0;   // gold_label "-"
  std::array<int64_t, kNumSnliLabels> label_counts{};  // indexed by label
};

// "entailment", "neutral", "contradiction".
const char* snli_label_name(int32_t label);

// Reads every record of `path`. Throws InputError "<path>: line N: <problem>" for a line
// that is not a JSON object, a missing or non-string sentence1/sentence2/gold_label, or an
// unknown label; "<path>: truncated gzip stream ..." for an incomplete download;
// "<path>: no records" for an empty file; and for a missing file or a directory.
SnliData read_snli(const std::string& path);

}  // namespace grassaudit
