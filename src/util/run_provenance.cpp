#include "util/run_provenance.h"

#include <algorithm>

#include "util/error.h"
#include "util/json_fields.h"

namespace grassaudit {
namespace {

using nlohmann::json;

bool all_hex(const std::string& s, size_t n) {
  return s.size() == n && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

std::string checked_commit(const json& p, const std::string& where) {
  std::string c = req_string(p, "git_commit", where);
  if (c != "unknown" && !all_hex(c, 40)) {
    throw InputError(where + ": 'git_commit' must be 40 hex digits or \"unknown\", got \"" + c + "\"");
  }
  return c;
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
    s.first_step = req_integer(e, "first_step", w);
    s.last_step = req_integer(e, "last_step", w);
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

}  // namespace

std::optional<RunProvenance> read_run_provenance(const json& p, const std::string& path) {
  if (p.is_null()) return std::nullopt;
  const std::string where = path + ": provenance";
  require_object(p, where);
  RunProvenance r;
  r.git_commit = checked_commit(p, where);
  r.git_dirty = req_bool(p, "git_dirty", where);
  r.grassaudit_version = req_string(p, "grassaudit_version", where);
  r.libtorch_version = req_string(p, "libtorch_version", where);
  r.blas = req_string(p, "blas", where);
  r.threads = req_integer(p, "threads", where);
  r.blas_threads = opt_integer(p, "blas_threads", where);
  r.world_size = req_integer(p, "world_size", where);
  r.device = req_string(p, "device", where);
  r.precision = opt_string(p, "precision", where).value_or("fp32");
  r.cpu = opt_string(p, "cpu", where).value_or("");
  r.gpu = opt_string(p, "gpu", where).value_or("");
  r.command_line = req_string(p, "command_line", where);
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

}  // namespace grassaudit
