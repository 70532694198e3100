#pragma once
// Reading the JSON artifacts the report is built from. Every failure is an InputError that
// names the file (and the line, for JSON lines), so a broken artifact is easy to find. The typed
// member access (opt_number, req_string, ...) is util/json_fields.h.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/json_fields.h"

namespace grassaudit {

// Parses a whole file as one JSON value. InputError "<path>: invalid JSON: ..." on bad JSON,
// the read_file error if the file is missing or unreadable.
nlohmann::json parse_json_file(const std::string& path);

// One JSON value per non-blank line. InputError "<path>:<line>: invalid JSON: ...", except for
// a torn last line (no terminating newline, does not parse), which is skipped.
std::vector<nlohmann::json> parse_jsonl_file(const std::string& path);

}  // namespace grassaudit
