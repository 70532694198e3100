#pragma once
// summary.json's "provenance" block as it is read back: which code, data and sessions produced a
// run. The trainers write it (src/train/provenance.h); the run summary's reader checks it
// (run_summary.h) and the report shows it. A run without the block was produced by older code.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace grassaudit {

// One training session (provenance "sessions", src/train/provenance.h): steps [first, last) and
// the code that trained them; recorded = false for steps a checkpoint from older code trained.
struct TrainingSession {
  long long first_step = 0;
  long long last_step = 0;
  bool recorded = true;
  std::string git_commit;  // 40 hex digits or "unknown"; empty when not recorded
  bool git_dirty = false;
};

struct RunProvenance {
  std::string git_commit;  // 40 hex digits, or "unknown"
  bool git_dirty = false;
  std::string grassaudit_version;
  std::string libtorch_version;
  std::string blas;
  long long threads = 0;
  std::optional<long long> blas_threads;  // only when the writer records it
  long long world_size = 1;
  std::string device;
  std::string precision = "fp32";  // "fp32" | "tf32" | "bf16"; fp32 where not recorded
  std::string cpu;                 // model name and cores; "" where not recorded
  std::string gpu;                 // a CUDA run's GPU, versions, TF32, cuBLAS; "" where not recorded
  std::string command_line;
  std::map<std::string, std::string> data_sha256;  // path -> 64 hex digits
  std::vector<TrainingSession> sessions;            // empty when the writer records none
};

// Reads a provenance block; nullopt when it is null. InputError "<path>: provenance: ..." for
// a missing or mistyped field, a commit that is neither 40 hex digits nor "unknown", or a data
// hash that is not 64 hex digits.
std::optional<RunProvenance> read_run_provenance(const nlohmann::json& block, const std::string& path);

}  // namespace grassaudit
