#include "util/json_fields.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "util/error.h"

namespace grassaudit {
namespace {

using nlohmann::json;

const json* member(const json& obj, const std::string& key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

// The value of a required key: InputError "<where>: missing '<key>'" when it is absent.
template <class T>
T required(std::optional<T> value, const std::string& key, const std::string& where) {
  if (!value) throw InputError(where + ": missing '" + key + "'");
  return std::move(*value);
}

[[noreturn]] void wrong_type(const std::string& where, const std::string& key,
                             const std::string& type) {
  throw InputError(where + ": '" + key + "' must be " + type);
}

}  // namespace

std::optional<double> opt_number(const json& obj, const std::string& key,
                                 const std::string& where) {
  const json* v = member(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_number()) wrong_type(where, key, "a number");
  const double d = v->get<double>();
  if (!std::isfinite(d)) wrong_type(where, key, "a finite number");
  return d;
}

std::optional<long long> opt_integer(const json& obj, const std::string& key,
                                     const std::string& where) {
  const json* v = member(obj, key);
  if (!v) return std::nullopt;
  if (v->is_number_integer()) return v->get<long long>();
  if (v->is_number_float()) {
    const double d = v->get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9e15) {
      return static_cast<long long>(d);
    }
  }
  wrong_type(where, key, "an integer");
}

std::optional<std::string> opt_string(const json& obj, const std::string& key,
                                      const std::string& where) {
  const json* v = member(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_string()) wrong_type(where, key, "a string");
  return v->get<std::string>();
}

std::optional<bool> opt_bool(const json& obj, const std::string& key, const std::string& where) {
  const json* v = member(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) wrong_type(where, key, "true or false");
  return v->get<bool>();
}

std::vector<double> opt_number_array(const json& obj, const std::string& key,
                                     const std::string& where) {
  std::vector<double> out;
  const json* v = member(obj, key);
  if (!v) return out;
  if (!v->is_array()) wrong_type(where, key, "an array of numbers");
  for (const auto& e : *v) {
    if (!e.is_number()) wrong_type(where, key, "an array of numbers");
    out.push_back(e.get<double>());
  }
  return out;
}

std::vector<long long> opt_integer_array(const json& obj, const std::string& key,
                                         const std::string& where) {
  std::vector<long long> out;
  const json* v = member(obj, key);
  if (!v) return out;
  if (!v->is_array()) wrong_type(where, key, "an array of integers");
  for (const auto& e : *v) {
    if (!e.is_number_integer()) wrong_type(where, key, "an array of integers");
    out.push_back(e.get<long long>());
  }
  return out;
}

std::string opt_choice(const json& obj, const std::string& key, const std::string& where,
                       const std::vector<std::string>& choices) {
  std::string v = opt_string(obj, key, where).value_or("");
  if (v.empty() || std::find(choices.begin(), choices.end(), v) != choices.end()) return v;
  std::string allowed;
  for (const auto& c : choices) allowed += (allowed.empty() ? "\"" : ", \"") + c + "\"";
  throw InputError(where + ": '" + key + "' must be " + allowed + " or null");
}

double req_number(const json& obj, const std::string& key, const std::string& where) {
  return required(opt_number(obj, key, where), key, where);
}

long long req_integer(const json& obj, const std::string& key, const std::string& where) {
  return required(opt_integer(obj, key, where), key, where);
}

std::string req_string(const json& obj, const std::string& key, const std::string& where) {
  return required(opt_string(obj, key, where), key, where);
}

bool req_bool(const json& obj, const std::string& key, const std::string& where) {
  return required(opt_bool(obj, key, where), key, where);
}

void require_object(const json& value, const std::string& where) {
  if (!value.is_object()) throw InputError(where + ": expected a JSON object");
}

}  // namespace grassaudit
