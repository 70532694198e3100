// Non-vacuity: replacing the first half of the inputs must move later outputs, or "causal" says
// little (a model that reads only the present is causal too). A note, never a violation.
#include <fmt/format.h>

#include "audit/audit_prober.h"
#include "audit/checks/check.h"
#include "audit/checks/check_outputs.h"
#include "audit/checks/json_fields.h"
#include "audit/precision_switch.h"

namespace grassaudit {
namespace {

class VacuityCheck : public Check {
 public:
  const char* name() const override { return "vacuity"; }
  bool wanted(const AuditRun&) const override { return true; }
  bool in_structural_pass() const override { return true; }
  void run(AuditRun& run) override {
    AuditResult& r = run.r;
    const InPrecision own = run.prec.in_own();
    r.past_effect = run.prober.past_effect(own, run.L);
    r.vacuous = r.past_effect == 0.0;
    if (r.vacuous)
      r.notes.push_back(future_horizon(run) > 0
                            ? "no output depends on earlier inputs (replacing the first half moved nothing): this "
                              "model reads only the present and the future"
                            : "vacuous: no output depends on earlier inputs either (replacing the first half moved "
                              "nothing), so 'causal' says little about this model");
  }
  // What the future tables decided (0 when they did not run).
  static int64_t future_horizon(const AuditRun& run) {
    const FutureHorizon* future = run.outputs.get<FutureHorizon>();
    return future ? future->horizon : 0;
  }
  void write_json(const AuditResult& r, nlohmann::json& j) const override {
    j["vacuous"] = r.vacuous;
    j["past_effect"] = r.past_effect;
  }
  std::vector<std::string> thread_dependent() const override { return {"past_effect"}; }
};

}  // namespace

std::unique_ptr<Check> make_vacuity_check() { return std::make_unique<VacuityCheck>(); }

}  // namespace grassaudit
