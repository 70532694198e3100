#pragma once
// Throughput measurements from reports/bench/*.json. A file holds one measurement object or
// {"results": [objects...]} (or a bare array of them).
#include <optional>
#include <string>
#include <vector>

namespace grassaudit {

struct BenchPoint {
  std::string file;  // file name (no folder), for the table
  std::string mixer;
  long long batch = 0;
  long long seq_len = 0;
  double tokens_per_second = 0;
  std::optional<double> ms_median, ms_min, ms_max;
  std::optional<long long> threads;       // LibTorch's OpenMP pool
  std::optional<long long> blas_threads;  // the BLAS pool, when the file records it
  std::string blas;
  std::optional<double> peak_rss_mb;
  std::string machine;
};

// All *.json files of bench_dir, sorted by file name; the points of each file keep their
// order, then everything is sorted by (mixer, batch, threads, seq_len). A missing folder gives
// an empty list. InputError naming the file for bad JSON or a missing required field
// (mixer, batch, seq_len, tokens_per_second).
std::vector<BenchPoint> load_bench(const std::string& bench_dir);

}  // namespace grassaudit
