#pragma once
// The published WikiText-2 word-level counts (one "<eos>" per line, as pytorch/examples
// counts; see ../shared/data/README.md), used to make sure the files are the real ones.
#include <cstdint>
#include <string>
#include <string_view>

namespace grassaudit {

struct WordCounts {
  int64_t lines = 0;
  int64_t tokens = 0;  // words + one <eos> per line
};

// Expected counts for split "train", "valid" or "test" (std::out_of_range otherwise).
WordCounts published_wikitext2_counts(const std::string& split);
constexpr int64_t kWikitext2WordVocab = 33278;  // over train + valid + test
constexpr int64_t kBertUncasedVocab = 30522;

// Counts `text` the word-level way. Throws InputError "<name>: line N: invalid UTF-8".
WordCounts count_words(std::string_view text, const std::string& name);

// Throws InputError "<name>: expected 217,646 tokens, found N; pass --allow-other-data to
// use it anyway" (tokens checked first, then lines) if `found` differs from `expected`.
void check_counts(const std::string& name, const WordCounts& expected, const WordCounts& found);

// The common tail of every "this is not the published data" message.
std::string other_data_hint();

}  // namespace grassaudit
