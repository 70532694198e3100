#pragma once
// A run's provenance as the report shows it: summary.json "provenance" (read by
// util/run_provenance.h) and the shape of audit.json (which gate wrote it). A run without a
// provenance block was produced by older code; an audit.json without the current gate's fields
// ("stopped_early", "seq_lens_planned", "modes_planned") was written by an older gate.
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "util/run_provenance.h"

namespace grassaudit {

// Which gate wrote audit.json.
struct AuditFileInfo {
  bool present = false;
  bool current_gate = false;  // has stopped_early, seq_lens_planned and modes_planned
  std::string target;         // audit.json "target", as written
};

AuditFileInfo read_audit_file_info(const nlohmann::json& audit, const std::string& where);

// Cells for the tables. A run trained in more than one session (resumed) lists them:
// "`0123456789ab`, 0.3.0; 2 sessions: steps 0-509 `0123456789ab`, 509-1662 `0123456789ab`".
// Where a run computed: the CPU, or for a CUDA run its GPU (or that it was not recorded) and the host.
std::string machine_cell(const RunProvenance& p);
// The BLAS that ran the GEMMs: the host's, or cuBLAS beside it for a CUDA run.
std::string blas_cell(const RunProvenance& p);
std::string code_cell(const std::optional<RunProvenance>& p);  // "`0123456789ab` (dirty), 0.3.0"
std::string data_cell(const RunProvenance& p);                 // "a `0123456789ab`; b `...`"
std::string threads_cell(const std::optional<RunProvenance>& p,
                         const std::optional<long long>& summary_threads);  // "2 / 2"
std::string audit_gate_cell(const AuditFileInfo& a);

// "produced by older code (no provenance; audit by an older gate)" and its variants.
std::string older_code_note(const AuditFileInfo& a);

}  // namespace grassaudit
