#pragma once
// Every audit option, described once (util/config_fields.h): its key, its check, its CLI flag and
// help. The CLI's flags (cli/cmd_audit.cpp), the Python package's keywords (the flag with '_' for
// '-': python/csrc/engine.cpp, and grassaudit.audit's signature, which a test compares with this
// table) and the training gate's settings (train/gate.cpp, as JSON keys) all come from it, so a
// new option is one line here. A switch's flag sets its field to switch_sets (--no-length-check
// sets length_check false).
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "audit/audit_options.h"
#include "util/config_fields.h"

namespace grassaudit {

const std::vector<Field<AuditOptions>>& audit_option_fields();

// The Python keyword of a flag: allow-lookahead -> allow_lookahead.
std::string option_keyword(const std::string& flag);

// Every field's check, with the flag's name in the message ("--batch must be >= 1, got 0"; a
// field without a flag by its key), then the rules across fields (at least one mode).
void validate_audit_options(const AuditOptions& options);

// The options `base` with the keys of `settings` (a JSON object keyed by the table's keys) set:
// how the training gate states its settings. InputError for an unknown key or a wrong type.
AuditOptions audit_options_from_json(const nlohmann::json& settings, AuditOptions base = {});
nlohmann::json audit_options_to_json(const AuditOptions& options);

}  // namespace grassaudit
