#include "report/provenance.h"

#include <algorithm>

#include "report/json_io.h"
#include "util/error.h"

namespace grassaudit {
namespace {

using nlohmann::json;

bool all_hex(const std::string& s, size_t n) {
  return s.size() == n && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

std::string req(const json& p, const char* key, const std::string& where) {
  auto v = opt_string(p, key, where);
  if (!v) throw InputError(where + ": missing '" + key + "'");
  return *v;
}

long long req_int(const json& p, const char* key, const std::string& where) {
  auto v = opt_integer(p, key, where);
  if (!v) throw InputError(where + ": missing '" + key + "'");
  return *v;
}

std::string checked_commit(const json& p, const std::string& where) {
  std::string c = req(p, "git_commit", where);
  if (c != "unknown" && !all_hex(c, 40)) {
    throw InputError(where + ": 'git_commit' must be 40 hex digits or \"unknown\", got \"" + c + "\"");
  }
  return c;
}

bool req_bool(const json& p, const char* key, const std::string& where) {
  auto v = opt_bool(p, key, where);
  if (!v) throw InputError(where + ": missing '" + key + "'");
  return *v;
}

std::vector<TrainingSession> read_sessions(const json& p, const std::string& where) {
  std::vector<TrainingSession> out;
  auto it = p.find("sessions");
  if (it == p.end() || it->is_null()) return out;
  if (!it->is_array()) throw InputError(where + ": 'sessions' must be an array");
  for (size_t i = 0; i < it->size(); ++i) {
    const std::string w = where + ": sessions[" + std::to_string(i) + "]";
    const json& e = (*it)[i];
    require_object(e, w);
    TrainingSession s;
    s.first_step = req_int(e, "first_step", w);
    s.last_step = req_int(e, "last_step", w);
    if (s.first_step < 0 || s.last_step < s.first_step) {
      throw InputError(w + ": steps must satisfy 0 <= first_step <= last_step");
    }
    s.recorded = opt_bool(e, "recorded", w).value_or(true);
    if (s.recorded) {
      s.git_commit = checked_commit(e, w);
      s.git_dirty = req_bool(e, "git_dirty", w);
    }
    out.push_back(s);
  }
  return out;
}

std::string short_commit(const std::string& c) {
  return c == "unknown" ? std::string("commit unknown") : "`" + c.substr(0, 12) + "`";
}

}  // namespace

std::optional<RunProvenance> read_provenance(const json& summary, const std::string& path) {
  auto it = summary.find("provenance");
  if (it == summary.end() || it->is_null()) return std::nullopt;
  const std::string where = path + ": provenance";
  require_object(*it, where);
  const json& p = *it;
  RunProvenance r;
  r.git_commit = checked_commit(p, where);
  r.git_dirty = req_bool(p, "git_dirty", where);
  r.grassaudit_version = req(p, "grassaudit_version", where);
  r.libtorch_version = req(p, "libtorch_version", where);
  r.blas = req(p, "blas", where);
  r.threads = req_int(p, "threads", where);
  r.blas_threads = opt_integer(p, "blas_threads", where);
  r.world_size = req_int(p, "world_size", where);
  r.device = req(p, "device", where);
  r.precision = opt_string(p, "precision", where).value_or("fp32");
  r.cpu = opt_string(p, "cpu", where).value_or("");
  r.command_line = req(p, "command_line", where);
  auto data = p.find("data_sha256");
  if (data == p.end() || !data->is_object()) {
    throw InputError(where + ": 'data_sha256' must be an object {path: sha256}");
  }
  for (auto d = data->begin(); d != data->end(); ++d) {
    if (!d.value().is_string() || !all_hex(d.value().get<std::string>(), 64)) {
      throw InputError(where + ": data_sha256 '" + d.key() + "' must be 64 lower-case hex digits");
    }
    r.data_sha256[d.key()] = d.value().get<std::string>();
  }
  r.sessions = read_sessions(p, where);
  return r;
}

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
