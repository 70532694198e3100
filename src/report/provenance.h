#pragma once
// A run's provenance as the report reads it: summary.json "provenance" (written by the trainers,
// src/train/provenance.h) and the shape of audit.json (which gate wrote it). A run without a
// provenance block was produced by older code; an audit.json without the current gate's fields
// ("stopped_early", "seq_lens_planned", "modes_planned") was written by an older gate.
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
  std::string command_line;
  std::map<std::string, std::string> data_sha256;  // path -> 64 hex digits
  std::vector<TrainingSession> sessions;            // empty when the writer records none
};

// Which gate wrote audit.json.
struct AuditFileInfo {
  bool present = false;
  bool current_gate = false;  // has stopped_early, seq_lens_planned and modes_planned
  std::string target;         // audit.json "target", as written
};

// Reads summary["provenance"]; nullopt when absent or null. InputError "<where>: provenance: ..."
// for a missing or mistyped field, a commit that is neither 40 hex digits nor "unknown", or a
// data hash that is not 64 hex digits.
std::optional<RunProvenance> read_provenance(const nlohmann::json& summary, const std::string& where);

AuditFileInfo read_audit_file_info(const nlohmann::json& audit, const std::string& where);

// Cells for the tables. A run trained in more than one session (resumed) lists them:
// "`0123456789ab`, 0.3.0; 2 sessions: steps 0-509 `0123456789ab`, 509-1662 `0123456789ab`".
std::string code_cell(const std::optional<RunProvenance>& p);  // "`0123456789ab` (dirty), 0.3.0"
std::string data_cell(const RunProvenance& p);                 // "a `0123456789ab`; b `...`"
std::string threads_cell(const std::optional<RunProvenance>& p,
                         const std::optional<long long>& summary_threads);  // "2 / 2"
std::string audit_gate_cell(const AuditFileInfo& a);

// "produced by older code (no provenance; audit by an older gate)" and its variants.
std::string older_code_note(const AuditFileInfo& a);

}  // namespace grassaudit
