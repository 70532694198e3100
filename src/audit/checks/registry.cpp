// The checks of an audit, in the order they run. A new check is one line here, its own file,
// and a control model in reference/ that it must catch.
#include <memory>
#include <vector>

#include "audit/checks/check.h"

namespace grassaudit {

std::unique_ptr<Check> make_batch_check();
std::unique_ptr<Check> make_future_check();
std::unique_ptr<Check> make_length_check();
std::unique_ptr<Check> make_past_check();
std::unique_ptr<Check> make_vacuity_check();
std::unique_ptr<Check> make_gradient_check();
std::unique_ptr<Check> make_structural_check();
std::unique_ptr<Check> make_property_check();
std::unique_ptr<Check> make_incremental_check();

const std::vector<std::unique_ptr<Check>>& registered_checks() {
  static const std::vector<std::unique_ptr<Check>> checks = [] {
    std::vector<std::unique_ptr<Check>> c;
    // Per output. Batch first: a coupled mode is then probed one row per pass, so rows that mix
    // never read as a future leak. The future tables next (the length check's guard is their
    // horizon, the gradient's comparison their table); the structural pass last (it audits the
    // future again with the zeros redrawn).
    c.push_back(make_batch_check());
    c.push_back(make_future_check());
    c.push_back(make_length_check());
    c.push_back(make_past_check());
    c.push_back(make_vacuity_check());
    c.push_back(make_gradient_check());
    c.push_back(make_structural_check());
    // Whole model, after every output is audited.
    c.push_back(make_property_check());
    c.push_back(make_incremental_check());
    return c;
  }();
  return checks;
}

}  // namespace grassaudit
