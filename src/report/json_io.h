#pragma once
// Reading the JSON artifacts the report is built from. Every failure is an InputError that
// names the file (and the line, for JSON lines), so a broken artifact is easy to find.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace grassaudit {

// Parses a whole file as one JSON value. InputError "<path>: invalid JSON: ..." on bad JSON,
// the read_file error if the file is missing or unreadable.
nlohmann::json parse_json_file(const std::string& path);

// One JSON value per non-blank line. InputError "<path>:<line>: invalid JSON: ...", except for
// a torn last line (no terminating newline, does not parse), which is skipped.
std::vector<nlohmann::json> parse_jsonl_file(const std::string& path);

// Typed, optional access to object members. `where` names the artifact in errors, e.g.
// "reports/runs/x/summary.json". A missing key or JSON null gives nullopt; a value of the
// wrong type is an InputError "<where>: '<key>' must be a <type>".
std::optional<double> opt_number(const nlohmann::json& obj, const std::string& key,
                                 const std::string& where);
std::optional<long long> opt_integer(const nlohmann::json& obj, const std::string& key,
                                     const std::string& where);
std::optional<std::string> opt_string(const nlohmann::json& obj, const std::string& key,
                                      const std::string& where);
std::optional<bool> opt_bool(const nlohmann::json& obj, const std::string& key,
                             const std::string& where);
std::vector<double> opt_number_array(const nlohmann::json& obj, const std::string& key,
                                     const std::string& where);
std::vector<long long> opt_integer_array(const nlohmann::json& obj, const std::string& key,
                                         const std::string& where);

// Same, but a missing key is an InputError "<where>: missing '<key>'".
double req_number(const nlohmann::json& obj, const std::string& key, const std::string& where);
std::string req_string(const nlohmann::json& obj, const std::string& key, const std::string& where);

// InputError "<where>: expected a JSON object" unless `value` is an object.
void require_object(const nlohmann::json& value, const std::string& where);

}  // namespace grassaudit
