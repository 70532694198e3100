#include "util/config_fields.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "util/config_json.h"
#include "util/error.h"

namespace grassaudit {

std::string choices_text(const std::vector<std::string>& choices) {
  std::string s;
  for (size_t i = 0; i < choices.size(); ++i)
    s += (i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + choices[i];
  return s;
}

FieldCheck any_value() { return {}; }

FieldCheck at_least(double lo, std::string note) {
  FieldCheck c;
  c.lo = FieldCheck::Bound{lo, true};
  c.note = std::move(note);
  return c;
}

FieldCheck finite_at_least(double lo, std::string note) {
  FieldCheck c = at_least(lo, std::move(note));
  c.finite = true;
  return c;
}

FieldCheck finite_above(double lo) {
  FieldCheck c;
  c.lo = FieldCheck::Bound{lo, false};
  c.finite = true;
  return c;
}

namespace {
FieldCheck interval(double lo, bool lo_in, double hi, bool hi_in) {
  FieldCheck c;
  c.lo = FieldCheck::Bound{lo, lo_in};
  c.hi = FieldCheck::Bound{hi, hi_in};
  return c;
}
}  // namespace

FieldCheck half_open(double lo, double hi) { return interval(lo, true, hi, false); }
FieldCheck closed_range(double lo, double hi) { return interval(lo, true, hi, true); }
FieldCheck open_range(double lo, double hi) { return interval(lo, false, hi, false); }

FieldCheck one_of(std::vector<std::string> choices) {
  FieldCheck c;
  c.choices = std::move(choices);
  return c;
}

FieldCheck non_empty_at_least(double lo) {
  FieldCheck c = at_least(lo);
  c.non_empty = true;
  return c;
}

// ---- checks --------------------------------------------------------------------------------

namespace {

bool within(const FieldCheck& c, double x) {
  if (c.finite && !std::isfinite(x)) return false;
  if (c.lo && !(c.lo->inclusive ? x >= c.lo->value : x > c.lo->value)) return false;
  if (c.hi && !(c.hi->inclusive ? x <= c.hi->value : x < c.hi->value)) return false;
  return true;  // a NaN fails any bound above (every comparison with NaN is false)
}

// ">= 1", "finite and > 0", "in [0, 1)", then " (note)".
std::string bound_text(const FieldCheck& c) {
  std::string s;
  if (c.lo && c.hi) {
    s = fmt::format("in {}{}, {}{}", c.lo->inclusive ? '[' : '(', c.lo->value, c.hi->value,
                    c.hi->inclusive ? ']' : ')');
  } else if (c.lo) {
    s = fmt::format("{}{} {}", c.finite ? "finite and " : "", c.lo->inclusive ? ">=" : ">", c.lo->value);
  } else if (c.hi) {
    s = fmt::format("{}{} {}", c.finite ? "finite and " : "", c.hi->inclusive ? "<=" : "<", c.hi->value);
  } else if (c.finite) {
    s = "finite";
  }
  if (!c.note.empty()) s += " (" + c.note + ")";
  return s;
}

bool has_bound(const FieldCheck& c) { return c.lo || c.hi || c.finite; }

template <class Number>
std::string number_violation(const FieldInfo& f, Number x) {
  if (!has_bound(f.check) || within(f.check, static_cast<double>(x))) return "";
  return fmt::format("{} must be {}, got {}", f.key, bound_text(f.check), x);
}

}  // namespace

std::string field_violation(const FieldInfo& f, ConstFieldRef value) {
  struct Visitor {
    const FieldInfo& f;
    std::string operator()(const int64_t* v) const { return number_violation(f, *v); }
    std::string operator()(const uint64_t* v) const { return number_violation(f, *v); }
    std::string operator()(const double* v) const { return number_violation(f, *v); }
    std::string operator()(const std::string* v) const {
      const auto& ok = f.check.choices;
      if (ok.empty() || std::find(ok.begin(), ok.end(), *v) != ok.end()) return "";
      return fmt::format("{} must be {}, got '{}'", f.key, choices_text(ok), *v);
    }
    std::string operator()(const std::vector<int64_t>* v) const {
      if (f.check.non_empty && v->empty()) return fmt::format("{} must not be empty", f.key);
      for (int64_t x : *v) {
        std::string why = number_violation(f, x);
        if (!why.empty()) return why;
      }
      return "";
    }
    std::string operator()(const bool*) const { return ""; }
    std::string operator()(const std::optional<int64_t>* v) const { return *v ? number_violation(f, **v) : ""; }
  };
  return std::visit(Visitor{f}, value);
}

void throw_field_violation(const std::string& config_name, const std::string& reason) {
  throw InputError(fmt::format("invalid {} config: {}", config_name, reason));
}

// ---- JSON ----------------------------------------------------------------------------------

namespace {
// A field's value as JSON: an unset optional is null.
struct ToJson {
  nlohmann::json operator()(const std::optional<int64_t>* v) const { return *v ? nlohmann::json(**v) : nullptr; }
  template <class T>
  nlohmann::json operator()(const T* v) const {
    return nlohmann::json(*v);
  }
};
}  // namespace

nlohmann::json field_to_json(ConstFieldRef value) { return std::visit(ToJson{}, value); }

void throw_not_an_object(const std::string& config_name) {
  throw InputError(fmt::format("{} config must be a JSON object", config_name));
}

void throw_unknown_key(const std::string& config_name, const std::string& key) {
  throw InputError(fmt::format("unknown {} config key '{}'", config_name, key));
}

namespace {
// A JSON integer literal that fits int64_t. 256.5 and 256.0 are floats in JSON: not integers.
bool is_int64(const nlohmann::json& v) {
  return v.is_number_integer() &&
         (!v.is_number_unsigned() || v.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()));
}
}  // namespace

void field_from_json(const nlohmann::json& v, FieldRef value, const std::string& config_name,
                     const std::string& key) {
  auto bad = [&](const char* what) {
    throw InputError(fmt::format("{} config key '{}' must be {}, got {}", config_name, key, what, v.dump()));
  };
  struct Visitor {
    const nlohmann::json& v;
    const decltype(bad)& fail;
    void operator()(int64_t* out) const {
      if (!is_int64(v)) fail(v.is_number_integer() ? "an integer below 2^63" : "an integer");
      *out = v.get<int64_t>();
    }
    void operator()(uint64_t* out) const {
      if (!v.is_number_unsigned()) fail("a non-negative integer");
      *out = v.get<uint64_t>();
    }
    void operator()(double* out) const {
      if (!v.is_number()) fail("a number");
      *out = v.get<double>();
    }
    void operator()(std::string* out) const {
      if (!v.is_string()) fail("a string");
      *out = v.get<std::string>();
    }
    void operator()(std::vector<int64_t>* out) const {
      if (!v.is_array()) fail("a list of integers");
      std::vector<int64_t> list;
      for (const auto& x : v) {
        if (!is_int64(x)) fail("a list of integers");
        list.push_back(x.get<int64_t>());
      }
      *out = std::move(list);
    }
    void operator()(bool* out) const {
      if (!v.is_boolean()) fail("true or false");
      *out = v.get<bool>();
    }
    void operator()(std::optional<int64_t>* out) const {
      if (v.is_null()) {
        out->reset();
        return;
      }
      if (!is_int64(v)) fail("an integer or null");
      *out = v.get<int64_t>();
    }
  };
  std::visit(Visitor{v, bad}, value);
}

}  // namespace grassaudit
