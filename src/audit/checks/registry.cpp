// The checks of an audit, in the order they run. A new check is one line here, its own file,
// and a control model in reference/ that it must catch (checks/README.md).
#include <algorithm>
#include <memory>
#include <vector>

#include "audit/checks/check.h"

namespace grassaudit {

// The checks in the order they run, one line each: make_NAME_check() in checks/NAME_check.cpp.
// Per output first. Batch first: a coupled mode is then probed one row per pass, so rows that mix
// never read as a future leak. The future tables next (the length check's guard is their horizon,
// the gradient's comparison their table); the structural pass last of those (it audits the future
// again with the zeros redrawn). Then the whole-model checks, after every output is audited.
#define GRASSAUDIT_CHECKS(CHECK) \
  CHECK(batch)                   \
  CHECK(future)                  \
  CHECK(length)                  \
  CHECK(past)                    \
  CHECK(vacuity)                 \
  CHECK(gradient)                \
  CHECK(structural)              \
  CHECK(localise)                \
  CHECK(property)                \
  CHECK(incremental)

#define GRASSAUDIT_DECLARE_CHECK(NAME) std::unique_ptr<Check> make_##NAME##_check();
GRASSAUDIT_CHECKS(GRASSAUDIT_DECLARE_CHECK)
#undef GRASSAUDIT_DECLARE_CHECK

namespace {
std::vector<std::unique_ptr<Check>>& registry() {
  static std::vector<std::unique_ptr<Check>> checks = [] {
    std::vector<std::unique_ptr<Check>> c;
#define GRASSAUDIT_ADD_CHECK(NAME) c.push_back(make_##NAME##_check());
    GRASSAUDIT_CHECKS(GRASSAUDIT_ADD_CHECK)
#undef GRASSAUDIT_ADD_CHECK
    return c;
  }();
  return checks;
}
}  // namespace
#undef GRASSAUDIT_CHECKS

const std::vector<std::unique_ptr<Check>>& registered_checks() { return registry(); }

ScopedCheck::ScopedCheck(std::unique_ptr<Check> check) : check_(check.get()) {
  registry().push_back(std::move(check));
}

ScopedCheck::~ScopedCheck() {
  auto& checks = registry();
  checks.erase(std::remove_if(checks.begin(), checks.end(), [&](const auto& c) { return c.get() == check_; }),
               checks.end());
}

}  // namespace grassaudit
