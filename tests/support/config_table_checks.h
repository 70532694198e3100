#pragma once
// Checks every config's field table (util/config_fields.h) the same way, from the table itself:
//   - the table declares every member of the struct and of the bases the test names, once (the
//     member count is read from the struct's aggregate initialisation, so a member added without
//     a table entry fails);
//   - keys and flags are unique;
//   - every field survives to_json -> from_json (each set to a non-default value first);
//   - 256.5 for any integer field (and inside an integer list) is a one-line error naming the key;
//   - every bound and choice of the table is enforced by validate(), naming the key.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/config_fields.h"
#include "util/error.h"

namespace grassaudit::testing {

// ---- member count of an aggregate (the Boost.PFR idea) ----
struct AnyMember {
  template <class T>
  operator T() const;  // declared only: used in unevaluated braced initialisation
};

template <class T, class... A>
constexpr auto brace_initialisable(int) -> decltype(T{std::declval<A>()...}, true) {
  return true;
}
template <class T, class... A>
constexpr bool brace_initialisable(...) {
  return false;
}
template <class T, size_t... I>
constexpr bool initialisable_with(std::index_sequence<I...>) {
  return brace_initialisable<T, decltype((void)I, AnyMember{})...>(0);
}
// The number of members of aggregate T: the largest N for which T{x1, ..., xN} compiles.
template <class T, size_t N = 0>
constexpr size_t aggregate_member_count() {
  if constexpr (!initialisable_with<T>(std::make_index_sequence<N + 1>())) return N;
  else return aggregate_member_count<T, N + 1>();
}

// ---- the checks ----

// `Bases`: the bases C derives fields from (AdamWTerms): each is one element of C's aggregate
// initialisation, and each of its members a field of the table.
template <class... Bases, class C>
void ExpectTableDeclaresEveryMemberOnce(const std::vector<Field<C>>& fields) {
  const size_t expected = aggregate_member_count<C>() - sizeof...(Bases) + (size_t{0} + ... + aggregate_member_count<Bases>());
  EXPECT_EQ(fields.size(), expected) << "a member of the struct is missing from its field table";
  C c{};
  std::set<const void*> members;
  std::set<std::string> keys, flags;
  for (const auto& f : fields) {
    const void* where = std::visit([](auto* p) -> const void* { return p; }, f.ref(c));
    EXPECT_TRUE(members.insert(where).second) << f.key << ": member declared twice";
    EXPECT_TRUE(keys.insert(f.key).second) << f.key << ": key declared twice";
    if (!f.flag.empty()) EXPECT_TRUE(flags.insert(f.flag).second) << f.flag << ": flag declared twice";
    if (!f.flag.empty()) EXPECT_FALSE(f.help.empty()) << f.flag << ": flag without help";
  }
}

// Sets every field to a value different from its current one (a different choice for fields
// with choices).
template <class C>
C WithEveryFieldChanged(const std::vector<Field<C>>& fields, C c) {
  for (const auto& f : fields) {
    struct Change {
      const FieldInfo& f;
      void operator()(int64_t* v) const { *v += 3; }
      void operator()(uint64_t* v) const { *v += 3; }
      void operator()(double* v) const { *v = *v * 0.5 + 0.125; }
      void operator()(std::string* v) const {
        for (const auto& choice : f.check.choices)
          if (choice != *v) {
            *v = choice;
            return;
          }
        *v += "-x";
      }
      void operator()(std::vector<int64_t>* v) const { v->push_back(7); }
      void operator()(bool* v) const { *v = !*v; }
      void operator()(std::optional<int64_t>* v) const { *v = v->value_or(4) + 3; }
    };
    std::visit(Change{f}, f.ref(c));
  }
  return c;
}

template <class C, class ToJson, class FromJson>
void ExpectEveryFieldRoundTrips(const std::vector<Field<C>>& fields, ToJson to_json, FromJson from_json) {
  const C defaults{};
  const C changed = WithEveryFieldChanged(fields, defaults);
  const nlohmann::json j = to_json(changed);
  EXPECT_EQ(j.size(), fields.size());
  const C back = from_json(j);
  for (const auto& f : fields) {
    SCOPED_TRACE(f.key);
    ASSERT_TRUE(j.contains(f.key));
    auto same = [](auto* a, auto* b) -> bool {
      using A = std::remove_const_t<std::remove_pointer_t<decltype(a)>>;
      using B = std::remove_const_t<std::remove_pointer_t<decltype(b)>>;
      if constexpr (std::is_same_v<A, B>) return *a == *b;
      else return false;
    };
    EXPECT_TRUE(std::visit(same, f.ref(back), f.ref(changed))) << "lost in the round trip";
    EXPECT_FALSE(std::visit(same, f.ref(back), f.ref(defaults))) << "the change did not reach the JSON";
  }
  EXPECT_EQ(to_json(back), j);
  // A key missing from the JSON keeps the base value.
  EXPECT_EQ(to_json(from_json(nlohmann::json::object())), to_json(defaults));
}

// "<name> config key '<key>' must be an integer, got 256.5", one line, for every integer field.
template <class C, class FromJson>
void ExpectIntegersRejectFractions(const std::vector<Field<C>>& fields, FromJson from_json, const std::string& name) {
  int checked = 0;
  for (const auto& f : fields) {
    nlohmann::json bad;
    std::string want;
    if (f.kind == FieldKind::kInt) {
      bad = 256.5;
      want = "an integer, got 256.5";
    } else if (f.kind == FieldKind::kUnsigned) {
      bad = 256.5;
      want = "a non-negative integer, got 256.5";
    } else if (f.kind == FieldKind::kIntList) {
      bad = nlohmann::json::array({1, 256.5});
      want = "a list of integers, got [1,256.5]";
    } else {
      continue;
    }
    SCOPED_TRACE(f.key);
    ++checked;
    try {
      from_json(nlohmann::json{{f.key, bad}});
      ADD_FAILURE() << "256.5 accepted for integer field " << f.key;
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()), name + " config key '" + f.key + "' must be " + want);
    }
    // 256.0 is a JSON float too: not silently an integer.
    if (f.kind == FieldKind::kInt) EXPECT_THROW(from_json(nlohmann::json{{f.key, 256.0}}), InputError);
    // A string where a number belongs.
    EXPECT_THROW(from_json(nlohmann::json{{f.key, "256"}}), InputError);
  }
  EXPECT_GT(checked, 0);
  try {
    from_json(nlohmann::json{{"no_such_key", 1}});
    ADD_FAILURE() << "unknown key accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "unknown " + name + " config key 'no_such_key'");
  }
  EXPECT_THROW(from_json(nlohmann::json::array()), InputError);
}

// Values just outside the field's numeric check (none when it has no bound).
inline std::vector<double> values_outside(const FieldInfo& f) {
  std::vector<double> out;
  const auto& c = f.check;
  const bool integral = f.kind == FieldKind::kInt || f.kind == FieldKind::kUnsigned ||
                        f.kind == FieldKind::kIntList || f.kind == FieldKind::kOptionalInt;
  if (c.lo) out.push_back(c.lo->inclusive ? (integral ? std::ceil(c.lo->value) - 1 : c.lo->value - 0.25)
                                          : c.lo->value);
  if (c.hi) out.push_back(c.hi->inclusive ? (integral ? std::floor(c.hi->value) + 1 : c.hi->value + 0.25)
                                          : c.hi->value);
  if (f.kind == FieldKind::kReal && (c.lo || c.hi)) out.push_back(std::nan(""));
  if (f.kind == FieldKind::kReal && c.finite) out.push_back(std::numeric_limits<double>::infinity());
  return out;
}

// Every bound and choice of the table is enforced: starting from `valid`, one field at a time
// set just outside its check makes validate() throw "invalid <name> config: <key> must ...".
template <class C, class Validate>
void ExpectEveryCheckEnforced(const std::vector<Field<C>>& fields, const C& valid, Validate validate,
                              const std::string& name) {
  ASSERT_NO_THROW(validate(valid));
  int checked = 0;
  auto expect_rejected = [&](const C& c, const FieldInfo& f, const std::string& what) {
    ++checked;
    try {
      validate(c);
      ADD_FAILURE() << f.key << " = " << what << " accepted";
    } catch (const InputError& e) {
      const std::string msg = e.what();
      const std::string want = "invalid " + name + " config: " + f.key + " must ";
      EXPECT_EQ(msg.rfind(want, 0), 0u) << f.key << " = " << what << ": " << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    }
  };
  for (const auto& f : fields) {
    SCOPED_TRACE(f.key);
    if (!f.check.choices.empty()) {
      C c = valid;
      *std::get<std::string*>(f.ref(c)) = "no-such-choice";
      expect_rejected(c, f, "no-such-choice");
    }
    if (f.check.non_empty) {
      C c = valid;
      std::get<std::vector<int64_t>*>(f.ref(c))->clear();
      expect_rejected(c, f, "[]");
    }
    for (double x : values_outside(f)) {
      C c = valid;
      struct Set {
        double x;
        void operator()(int64_t* v) const { *v = static_cast<int64_t>(x); }
        void operator()(uint64_t* v) const { *v = static_cast<uint64_t>(x); }
        void operator()(double* v) const { *v = x; }
        void operator()(std::string*) const {}
        void operator()(std::vector<int64_t>* v) const {
          if (v->empty()) v->push_back(0);
          v->back() = static_cast<int64_t>(x);
        }
        void operator()(bool*) const {}
        void operator()(std::optional<int64_t>* v) const { *v = static_cast<int64_t>(x); }
      };
      std::visit(Set{x}, f.ref(c));
      expect_rejected(c, f, std::to_string(x));
    }
  }
  EXPECT_GT(checked, 0);
}

}  // namespace grassaudit::testing
