#pragma once
// Provenance of a run, stored in summary.json under "provenance": which code (git commit, dirty
// flag, grassaudit and LibTorch versions), which machine settings (BLAS, threads, world size,
// device), which data (SHA-256 of every file read) and which command produced it. The report
// shows it beside every run, and an artifact without it is marked as made by older code.
#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace grassaudit {

struct ProvenanceInputs {
  std::map<std::string, std::string> data_sha256;  // path relative to the data folder -> hex
  std::string device = "cpu";
  int64_t world_size = 1;
  std::string precision = "fp32";  // float32 math of the training steps (train --precision)
};

// {"git_commit", "git_dirty", "grassaudit_version", "libtorch_version", "blas", "threads",
//  "blas_threads" (OpenBLAS's own pool; 0 for another BLAS), "world_size", "device", "precision"
//  (fp32 | tf32 | bf16), "cpu" (model name and core count: the precision's speed and its bf16
//  arithmetic depend on the CPU), "command_line", "data_sha256": {path: hex}}
nlohmann::json run_provenance(const ProvenanceInputs& inputs);

// One training session of a run (a new run is one session; each --resume adds one): the code and
// command that trained steps [first_step, last_step). A run resumed by another build, or with
// other settings, says so in its provenance instead of naming only the last session's code.
// {"first_step", "last_step", "git_commit", "git_dirty", "grassaudit_version", "world_size",
//  "threads", "device", "precision", "cpu", "command_line"}
nlohmann::json session_record(const ProvenanceInputs& inputs, int64_t first_step, int64_t last_step);

// The sessions a checkpoint's meta records ("sessions"), or, for a checkpoint written before
// sessions were recorded, one entry {"first_step": 0, "last_step": resume_step, "recorded": false}
// (nothing known about the code that trained them). An empty array for a new run (no meta).
nlohmann::json earlier_sessions(const nlohmann::json* checkpoint_meta, int64_t resume_step);

}  // namespace grassaudit
