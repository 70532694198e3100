#pragma once
// Plain forwards through model files, side by side: each file opened through the one model-file
// seam (formats/model_file.h: TorchScript, torch.export, ...), eval mode, no gradients, the same
// input for all, reps interleaved file by file so their ratio is measured under one load. What a
// format's interpreter costs against another format of the same model, and whether the formats
// compute the same thing (each file's output against the first file's).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "audit/model_signature.h"
#include "bench/bench_record.h"

namespace grassaudit {

struct FileForwardOptions {
  std::vector<std::string> files;
  std::vector<InputBinding> inputs;  // as audit --input
  int64_t batch = 32, seq_len = 128;
  int reps = 5, warmup = 1;
};

// Throughput per forward: batch * seq_len tokens.
struct FileForwardTiming : Throughput {
  std::string file, format;
  int64_t seq_len = 0;
  // The first rep's output against the first file's on the same input: max |y - y0| and that over
  // max |y0| (the first file's own: 0); nullopt when the outputs' shapes differ (or y0 is all zeros).
  std::optional<double> max_abs_diff, max_rel_diff;
};

// InputError (one line) for a file that does not open or an input it does not take.
std::vector<FileForwardTiming> bench_file_forward(const FileForwardOptions& o);
nlohmann::json to_json(const FileForwardTiming& t);

}  // namespace grassaudit
