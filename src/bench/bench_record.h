#pragma once
// What every benchmark's record shares: the spread of its timed reps and the machine they ran
// on, written under the same JSON keys by each, so that files from `bench`, `bench --decode` and
// `bench --files` compare field by field.
// No LibTorch headers here: the CLI includes this through the benchmarks' headers.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace grassaudit {

// Milliseconds of one timed unit (a step, a token, a forward) over the reps.
struct Spread {
  double median = 0, min = 0, max = 0;
};

struct BenchHost {
  int threads = 0;
  std::string blas, machine;
};

// How fast a benchmarked thing ran, and where: the part of a record every benchmark shares.
struct Throughput {
  int64_t batch = 0;
  double tokens_per_second = 0;  // the tokens of one timed unit over its median time
  Spread ms;                     // per timed unit: a training step, a decoded token, a forward
  BenchHost host;
};

// The spread of `ms` (the reps of one timed unit of `tokens` tokens; the median of an even count
// the mean of the middle two) and this process's threads, BLAS and machine, into `t`.
void set_throughput(Throughput& t, std::vector<double> ms, double tokens);

// {"batch", "tokens_per_second", `ms_key`: the spread, and the host's "threads", "blas",
// "blas_core", "blas_core_source", "machine", "cpu_units"}.
nlohmann::json throughput_json(const Throughput& t, const char* ms_key);

}  // namespace grassaudit
