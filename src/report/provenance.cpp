#include "report/provenance.h"

#include "report/json_io.h"

namespace grassaudit {
namespace {

using nlohmann::json;

std::string short_commit(const std::string& c) {
  return c == "unknown" ? std::string("commit unknown") : "`" + c.substr(0, 12) + "`";
}

}  // namespace

AuditFileInfo read_audit_file_info(const json& audit, const std::string& where) {
  AuditFileInfo a;
  a.present = true;
  a.current_gate = audit.contains("stopped_early") && audit.contains("seq_lens_planned") &&
                   audit.contains("modes_planned");
  a.target = opt_string(audit, "target", where).value_or("");
  return a;
}

std::string code_cell(const std::optional<RunProvenance>& p) {
  if (!p) return "older code (no provenance)";
  std::string out = short_commit(p->git_commit);
  if (p->git_dirty) out += " (dirty)";
  out += ", " + p->grassaudit_version;
  if (p->sessions.size() < 2) return out;
  out += "; " + std::to_string(p->sessions.size()) + " sessions:";
  for (size_t i = 0; i < p->sessions.size(); ++i) {
    const TrainingSession& s = p->sessions[i];
    out += std::string(i ? "," : "") + " steps " + std::to_string(s.first_step) + "-" + std::to_string(s.last_step) + " ";
    out += s.recorded ? short_commit(s.git_commit) + (s.git_dirty ? " (dirty)" : "") : std::string("code not recorded");
  }
  return out;
}

std::string data_cell(const RunProvenance& p) {
  if (p.data_sha256.empty()) return "none recorded";
  std::string out;
  for (const auto& [path, hex] : p.data_sha256) {
    if (!out.empty()) out += "; ";
    out += path + " `" + hex.substr(0, 12) + "`";
  }
  return out;
}

std::string threads_cell(const std::optional<RunProvenance>& p,
                         const std::optional<long long>& summary_threads) {
  const std::optional<long long> omp = p ? std::optional<long long>(p->threads) : summary_threads;
  const std::string blas = p && p->blas_threads ? std::to_string(*p->blas_threads) : "not recorded";
  return (omp ? std::to_string(*omp) : "?") + " / " + blas;
}

bool on_gpu(const RunProvenance& p) { return p.device.rfind("cuda", 0) == 0; }

std::string machine_cell(const RunProvenance& p) {
  const std::string cpu = p.cpu.empty() ? "CPU not recorded" : p.cpu;
  if (!on_gpu(p)) return cpu;
  return (p.gpu.empty() ? std::string("GPU not recorded (run by code from before GPU provenance)") : "GPU " + p.gpu) +
         "; host " + cpu;
}

std::string blas_cell(const RunProvenance& p) {
  if (!on_gpu(p)) return p.blas;
  return (p.gpu.empty() ? std::string("the GPU's BLAS not recorded") : std::string("cuBLAS")) + "; host " + p.blas;
}

std::string audit_gate_cell(const AuditFileInfo& a) {
  if (!a.present) return "no audit.json";
  std::string out = a.current_gate ? "current gate" : "older gate (no stopped_early / *_planned)";
  if (!a.target.empty()) out += "; target: " + a.target;
  return out;
}

std::string older_code_note(const AuditFileInfo& a) {
  std::string out = "produced by older code (no provenance";
  if (a.present && !a.current_gate) out += "; audit by an older gate";
  return out + ")";
}

}  // namespace grassaudit
