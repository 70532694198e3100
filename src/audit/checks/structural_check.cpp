// The structural pass (causality_audit.h: StructuralPass): a branch behind an exactly-zero
// parameter (a zero-initialised output projection, ReZero's alpha = 0, adaLN-Zero's gate) adds
// nothing at these weights, so no probe sees what it reads; one training step later it reads it.
// The exactly-zero tensors are redrawn at the scale of their siblings, the future audited again
// (same contract, schedule and modes), and the zeros put back however it ends.
#include <fmt/format.h>

#include "audit/audit_prober.h"
#include "audit/checks/check.h"
#include "audit/checks/check_outputs.h"
#include "audit/checks/json_fields.h"
#include "audit/precision_switch.h"
#include "util/error.h"

namespace grassaudit {
namespace {

// "a", "a and b", "a, b and c".
std::string name_list(const std::vector<RedrawnTensor>& t) {
  std::string out;
  for (size_t i = 0; i < t.size(); ++i) {
    if (i > 0) out += i + 1 == t.size() ? " and " : ", ";
    out += t[i].name;
  }
  return out;
}

// It never ends the audit: a failure is reported in not_run.
StructuralPass structural_pass(AuditTarget& target, const AuditOptions& opt) {
  StructuralPass sp;
  if (!opt.structural) {
    sp.weights_as_given = true;
    sp.skipped = "--weights-as-given: the weights were audited as given, exactly-zero tensors included";
    return sp;
  }
  try {
    sp.tensors = target.redraw_zero_parameters(probe_seed(opt.seed, "structural"));
    if (sp.tensors.empty()) {
      sp.skipped = "no parameter tensor (biases aside) is exactly zero";
      return sp;
    }
    const AuditResult s = run_structural_audit(target, opt);  // the checks in_structural_pass() only
    sp.ran = true;
    sp.leak_horizon = s.leak_horizon;
    sp.max_effect = s.max_effect;
    sp.precision = s.precision;
    sp.verdict = s.leak_horizon > opt.lookahead ? Verdict::kLeaky : Verdict::kCausal;
    for (const auto& v : s.violations)
      if (v.kind == ViolationKind::kFuture) sp.evidence = v.evidence;
  } catch (const std::exception& e) {
    sp.ran = false;
    sp.not_run = failure_line(e);
    if (sp.not_run.empty()) sp.not_run = "the structural pass failed";
  }
  try {
    target.restore_redrawn_parameters();
  } catch (const std::exception& e) {
    throw InputError(fmt::format("{}: the structural pass could not put the exactly-zero parameters back: {}",
                                 target.describe(), failure_line(e)));
  }
  return sp;
}

class StructuralCheck : public Check {
 public:
  const char* name() const override { return "structural"; }
  bool wanted(const AuditRun& run) const override { return run.target.supports_structural_pass(); }
  bool carries_horizon(ViolationKind k) const override { return k == ViolationKind::kStructural; }

  // In the precision that decided the future tables: the pass's own audit takes it as the
  // target's own dtype.
  void run(AuditRun& run) override {
    AuditResult& r = run.r;
    const InPrecision in = run.prec.in_decided();
    r.structural = structural_pass(run.target, run.opt);
    const StructuralPass& sp = *r.structural;
    if (sp.ran && !leaks_further(run))
      r.notes.push_back(fmt::format("structural pass: {} exactly zero in these weights; redrawn at the scale of {} "
                                    "siblings the model reads the future no further (horizon {})",
                                    name_list(sp.tensors) + (sp.tensors.size() == 1 ? " is" : " are"),
                                    sp.tensors.size() == 1 ? "its" : "their", sp.leak_horizon));
  }

  void judge(const AuditRun& run, std::vector<Violation>& out) const override {
    if (!run.r.structural || !leaks_further(run)) return;
    const StructuralPass& sp = *run.r.structural;
    const bool one = sp.tensors.size() == 1;
    Evidence ev = sp.evidence;
    ev.text = fmt::format("the future is read through {}, which {} exactly zero in these weights: one training step "
                          "makes it leak (with {} redrawn at the scale of {} siblings, {})",
                          name_list(sp.tensors), one ? "is" : "are", one ? "it" : "them", one ? "its" : "their",
                          sp.evidence.text);
    out.push_back({ViolationKind::kStructural, sp.leak_horizon, run.opt.lookahead, ev});
  }

  void write_json(const AuditResult& r, nlohmann::json& j) const override {
    if (!r.structural) {
      j["structural"] = nullptr;
      return;
    }
    const auto& sp = *r.structural;
    nlohmann::json tensors = nlohmann::json::array();
    for (const auto& t : sp.tensors) tensors.push_back({{"name", t.name}, {"shape", t.shape}, {"scale", t.scale}});
    nlohmann::json sj{{"verdict", sp.ran ? nlohmann::json(verdict_name(sp.verdict)) : nlohmann::json(nullptr)},
                      {"leak_horizon", sp.ran ? nlohmann::json(sp.leak_horizon) : nlohmann::json(nullptr)},
                      {"tensors_redrawn", tensors},
                      {"weights_as_given", sp.weights_as_given}};
    if (sp.ran) {
      sj["max_effect"] = sp.max_effect;
      sj["precision"] = sp.precision;
    }
    if (!sp.skipped.empty()) sj["skipped"] = sp.skipped;
    if (!sp.not_run.empty()) sj["not_run"] = sp.not_run;
    j["structural"] = sj;
  }

  std::string headline(const Violation& v, const AuditResult& r) const override {
    if (v.kind != ViolationKind::kStructural) return "";
    return fmt::format("STRUCTURALLY LEAKY (horizon {} through {}, exactly zero in these weights)", v.horizon,
                       r.structural ? name_list(r.structural->tensors) : std::string("a zero tensor"));
  }

  std::vector<Expectation> expectations() const override {
    // leaky | causal (the pass ran) | none (it did not)
    return {{"structural", [](const AuditResult& r) {
               return nlohmann::json(r.structural && r.structural->ran ? verdict_name(r.structural->verdict) : "none");
             }}};
  }

  std::string summary(const AuditResult& r) const override {
    if (r.structural && r.structural->ran)
      return fmt::format("  structural pass: {} (horizon {}) with {} redrawn\n", verdict_name(r.structural->verdict),
                         r.structural->leak_horizon, name_list(r.structural->tensors));
    if (r.structural && !r.structural->not_run.empty())
      return fmt::format("  structural pass: not run ({})\n", r.structural->not_run);
    if (r.structural && r.structural->weights_as_given) return "  structural pass: skipped (--weights-as-given)\n";
    return "";
  }

 private:
  // The redrawn weights read the future beyond both the lookahead and the horizon as given.
  static bool leaks_further(const AuditRun& run) {
    const StructuralPass& sp = *run.r.structural;
    const FutureHorizon* future = run.outputs.get<FutureHorizon>();
    return sp.ran && sp.leak_horizon > std::max(run.opt.lookahead, future ? future->horizon : 0);
  }
};

}  // namespace

std::unique_ptr<Check> make_structural_check() { return std::make_unique<StructuralCheck>(); }

}  // namespace grassaudit
