#pragma once
// One declaration per config field: its JSON key, its CLI flag (if any), help text, the member
// it lives in and the range it must lie in. Everything else about a config is generated from
// that one table: to_json / from_json (util/config_json.h), the range checks of validate()
// (check_fields below) and the command-line flags (cli/cli_common.h: add_config_flags /
// apply_config_flags). So a field is written once, and every config reads integers the same way
// (256.5 is an error in all of them, never truncated to 256).
//
// The configs stay plain structs (callers read cfg.d_model); only the table knows their fields.
// Cross-field rules (offsets vs max_len, d_model divisible by heads, ...) stay hand-written in
// each config's validate(), after check_fields.
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace grassaudit {

// What a field's value must satisfy. Numeric bounds apply to the value (to every element of a
// list); a NaN fails every bound. The error names the field by its JSON key, e.g.
// "d_model must be >= 1, got 0", "dropout must be in [0, 1), got 1.5",
// "tokenizer must be word or wordpiece, got 'bpe'".
struct FieldCheck {
  struct Bound {
    double value;
    bool inclusive;
  };
  std::optional<Bound> lo, hi;
  bool finite = false;               // reals: inf is an error ("must be finite and > 0")
  bool non_empty = false;            // lists
  std::vector<std::string> choices;  // strings: the allowed values (empty = any)
  std::string note;                  // said after the bound: "(0 = no limit)"
};

FieldCheck any_value();
FieldCheck at_least(double lo, std::string note = "");         // >= lo
FieldCheck finite_at_least(double lo, std::string note = "");  // finite and >= lo
FieldCheck finite_above(double lo);                            // finite and > lo
FieldCheck half_open(double lo, double hi);                    // in [lo, hi)
FieldCheck closed_range(double lo, double hi);                 // in [lo, hi]
FieldCheck open_range(double lo, double hi);                   // in (lo, hi)
FieldCheck one_of(std::vector<std::string> choices);
// How allowed values read in a message: "a or b", "a, b or c".
std::string choices_text(const std::vector<std::string>& choices);
FieldCheck non_empty_at_least(double lo);                      // lists: non-empty, each >= lo

// The value types a config field may have, as pointers into one config object: a switch is a
// bool, an optional integer is unset (JSON null, no flag) until given.
using FieldRef = std::variant<int64_t*, uint64_t*, double*, std::string*, std::vector<int64_t>*, bool*,
                              std::optional<int64_t>*>;
using ConstFieldRef = std::variant<const int64_t*, const uint64_t*, const double*, const std::string*,
                                   const std::vector<int64_t>*, const bool*, const std::optional<int64_t>*>;

// The value type of a field, in the order of FieldRef's alternatives.
enum class FieldKind { kInt, kUnsigned, kReal, kText, kIntList, kSwitch, kOptionalInt };

// A field without its member: what the JSON, check and flag code needs to know.
struct FieldInfo {
  std::string key;   // JSON key, also the name in error messages
  std::string flag;  // command-line flag without "--"; "" = no flag
  std::string help;  // the flag's --help text
  FieldCheck check;
  FieldKind kind;
  bool switch_sets = true;  // a switch: the value its flag, when given, sets (false for --no-X)
};

template <class Config>
struct Field : FieldInfo {
  using Member = std::variant<int64_t Config::*, uint64_t Config::*, double Config::*, std::string Config::*,
                              std::vector<int64_t> Config::*, bool Config::*, std::optional<int64_t> Config::*>;
  Member member;

  // `Owner` is Config or a base of it: fields that several configs share (AdamW's terms).
  template <class T, class Owner>
  Field(std::string key, T Owner::*m, FieldCheck check, std::string flag = "", std::string help = "",
        bool switch_sets = true)
      : FieldInfo{std::move(key), std::move(flag), std::move(help), std::move(check), FieldKind::kInt, switch_sets},
        member(static_cast<T Config::*>(m)) {
    kind = static_cast<FieldKind>(member.index());
  }

  FieldRef ref(Config& c) const {
    return std::visit([&](auto m) -> FieldRef { return &(c.*m); }, member);
  }
  ConstFieldRef ref(const Config& c) const {
    return std::visit([&](auto m) -> ConstFieldRef { return &(c.*m); }, member);
  }
};

// "" when `value` satisfies info.check, otherwise the reason ("d_model must be >= 1, got 0").
std::string field_violation(const FieldInfo& info, ConstFieldRef value);

// InputError "invalid <name> config: <reason>" for the first field (in table order) whose value
// breaks its check. `name` is the config's name in messages: "model", "train", "NLI model", ...
void throw_field_violation(const std::string& config_name, const std::string& reason);
template <class Config>
void check_fields(const Config& c, const std::vector<Field<Config>>& fields, const std::string& config_name) {
  for (const auto& f : fields) {
    std::string why = field_violation(f, f.ref(c));
    if (!why.empty()) throw_field_violation(config_name, why);
  }
}

}  // namespace grassaudit
