#include "report/bench.h"

#include <algorithm>
#include <filesystem>
#include <system_error>
#include <tuple>

#include "report/json_io.h"
#include "util/error.h"

namespace grassaudit {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

BenchPoint read_point(const json& j, const std::string& file, const std::string& where) {
  require_object(j, where);
  BenchPoint p;
  p.file = file;
  p.mixer = req_string(j, "mixer", where);
  auto batch = opt_integer(j, "batch", where);
  auto seq_len = opt_integer(j, "seq_len", where);
  if (!batch) throw InputError(where + ": missing 'batch'");
  if (!seq_len) throw InputError(where + ": missing 'seq_len'");
  p.batch = *batch;
  p.seq_len = *seq_len;
  p.tokens_per_second = req_number(j, "tokens_per_second", where);
  if (auto ms = j.find("ms_per_step"); ms != j.end() && !ms->is_null()) {
    const std::string w = where + " (ms_per_step)";
    require_object(*ms, w);
    p.ms_median = opt_number(*ms, "median", w);
    p.ms_min = opt_number(*ms, "min", w);
    p.ms_max = opt_number(*ms, "max", w);
  }
  p.threads = opt_integer(j, "threads", where);
  p.blas_threads = opt_integer(j, "blas_threads", where);
  p.blas = opt_string(j, "blas", where).value_or("");
  p.peak_rss_mb = opt_number(j, "peak_rss_mb", where);
  p.machine = opt_string(j, "machine", where).value_or("");
  return p;
}

}  // namespace

std::vector<BenchPoint> load_bench(const std::string& bench_dir) {
  std::error_code ec;
  if (!fs::is_directory(bench_dir, ec)) return {};
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(bench_dir, ec)) {
    if (entry.is_regular_file(ec) && entry.path().extension() == ".json") {
      files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  std::vector<BenchPoint> out;
  for (const auto& f : files) {
    const std::string path = f.string();
    const std::string name = f.filename().string();
    const json j = parse_json_file(path);
    if (j.is_array() || (j.is_object() && j.contains("results"))) {
      const json& results = j.is_array() ? j : j["results"];
      if (!results.is_array()) throw InputError(path + ": 'results' must be an array");
      size_t i = 0;
      for (const auto& r : results) {
        out.push_back(read_point(r, name, path + " (results[" + std::to_string(i++) + "])"));
      }
    } else {
      out.push_back(read_point(j, name, path));
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const BenchPoint& a, const BenchPoint& b) {
    return std::make_tuple(a.mixer, a.batch, a.threads.value_or(0), a.seq_len) <
           std::make_tuple(b.mixer, b.batch, b.threads.value_or(0), b.seq_len);
  });
  return out;
}

}  // namespace grassaudit
