#pragma once
// JSON read/write of a config from its field table (util/config_fields.h). Included only by the
// config .cpp files, so the config headers stay free of <nlohmann/json.hpp>.
//
// Reading is strict and the same for every config: the value must be a JSON object; an unknown
// key is "unknown <name> config key 'k'"; a value of the wrong kind is one line naming the key
// and what it must be: integers must be JSON integers (256.5 and 256.0 are errors, not 256),
// reals any JSON number, seeds non-negative integers, lists JSON arrays of integers.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/config_fields.h"

namespace grassaudit {

nlohmann::json field_to_json(ConstFieldRef value);
// Sets *value from v, or throws InputError "<name> config key '<key>' must be an integer, got 256.5".
void field_from_json(const nlohmann::json& v, FieldRef value, const std::string& config_name,
                     const std::string& key);
[[noreturn]] void throw_not_an_object(const std::string& config_name);
[[noreturn]] void throw_unknown_key(const std::string& config_name, const std::string& key);

// {key: value} for every field of the table.
template <class Config>
nlohmann::json fields_to_json(const Config& c, const std::vector<Field<Config>>& fields) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& f : fields) j[f.key] = field_to_json(f.ref(c));
  return j;
}

// Starts from `base` and overrides the keys present in j (so a file may set some fields only).
template <class Config>
Config fields_from_json(const nlohmann::json& j, const std::vector<Field<Config>>& fields, Config base,
                        const std::string& config_name) {
  if (!j.is_object()) throw_not_an_object(config_name);
  for (auto it = j.begin(); it != j.end(); ++it) {
    const Field<Config>* field = nullptr;
    for (const auto& f : fields)
      if (f.key == it.key()) field = &f;
    if (field == nullptr) throw_unknown_key(config_name, it.key());
    field_from_json(it.value(), field->ref(base), config_name, it.key());
  }
  return base;
}

}  // namespace grassaudit
