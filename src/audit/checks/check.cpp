// What the checks share: the run's state, one-line failures, evidence as JSON.
#include "audit/checks/check.h"

#include <c10/util/Exception.h>

#include "audit/checks/decide.h"
#include "audit/checks/future_tables.h"
#include "audit/checks/json_fields.h"
#include "util/error_text.h"

namespace grassaudit {

bool AuditRun::settled() const {
  const DecidedTables* tables = outputs.get<DecidedTables>();
  return tables && tables->stopped_early;
}

std::string failure_line(const std::exception& e) {
  if (const auto* c10 = dynamic_cast<const c10::Error*>(&e)) return first_meaningful_line(c10->what_without_backtrace());
  return first_meaningful_line(e.what());
}

nlohmann::json evidence_json(const Evidence& e) {
  if (e.empty()) return nullptr;
  nlohmann::json j;
  if (!e.mode.empty()) j["mode"] = e.mode;
  if (e.seq_len >= 0) j["seq_len"] = e.seq_len;
  if (e.prefix_len >= 0) j["prefix_len"] = e.prefix_len;
  if (e.position >= 0) j["position"] = e.position;
  if (e.cut >= 0) j["cut"] = e.cut;
  if (e.row >= 0) j["row"] = e.row;
  j["effect"] = e.effect;
  j["precision"] = e.precision;
  j["text"] = e.text;
  return j;
}

}  // namespace grassaudit
