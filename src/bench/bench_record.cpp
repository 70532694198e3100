#include "bench/bench_record.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <utility>

#include "runtime/cpu_features.h"
#include "runtime/runtime.h"

namespace grassaudit {
namespace {

Spread spread_of(std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  const size_t n = ms.size();
  Spread s;
  s.median = n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
  s.min = ms.front();
  s.max = ms.back();
  return s;
}

nlohmann::json spread_json(const Spread& s) { return {{"median", s.median}, {"min", s.min}, {"max", s.max}}; }

BenchHost this_host() { return {at::get_num_threads(), blas_in_use(), machine_description()}; }

}  // namespace

void set_throughput(Throughput& t, std::vector<double> ms, double tokens) {
  t.ms = spread_of(std::move(ms));
  t.tokens_per_second = tokens / (t.ms.median / 1e3);
  t.host = this_host();
}

nlohmann::json throughput_json(const Throughput& t, const char* ms_key) {
  return {{"batch", t.batch},
          {"tokens_per_second", t.tokens_per_second},
          {ms_key, spread_json(t.ms)},
          {"threads", t.host.threads},
          {"blas", t.host.blas},
          {"blas_core", blas_core()},
          {"blas_core_source", blas_core_source()},
          {"machine", t.host.machine},
          {"cpu_units", cpu_matrix_units(detect_cpu_features())}};
}

}  // namespace grassaudit
