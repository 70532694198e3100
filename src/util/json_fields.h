#pragma once
// Typed access to the members of a JSON object read from an artifact. The run summary's reader
// (run_summary.h) and the report's readers share it, so a field reads, and fails, the same way
// wherever it is read.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace grassaudit {

// `where` names the artifact in errors, e.g. "reports/runs/x/summary.json". A missing key or
// JSON null gives nullopt; a value of the wrong type is an InputError
// "<where>: '<key>' must be a <type>".
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

// An optional string that must be one of `choices`; "" when missing or null. Any other string is
// an InputError "<where>: '<key>' must be "a", "b" or null".
std::string opt_choice(const nlohmann::json& obj, const std::string& key, const std::string& where,
                       const std::vector<std::string>& choices);

// Same, but a missing key is an InputError "<where>: missing '<key>'".
double req_number(const nlohmann::json& obj, const std::string& key, const std::string& where);
long long req_integer(const nlohmann::json& obj, const std::string& key, const std::string& where);
std::string req_string(const nlohmann::json& obj, const std::string& key, const std::string& where);
bool req_bool(const nlohmann::json& obj, const std::string& key, const std::string& where);

// InputError "<where>: expected a JSON object" unless `value` is an object.
void require_object(const nlohmann::json& value, const std::string& where);

}  // namespace grassaudit
