// Method 2 (causality_audit.h), a second opinion: d y_t / d e_s for s > t at the main length, in
// the decisive precision, against method 1's horizon in the same mode. Whatever stops it (a
// backward LibTorch refuses, a batch size the model does not run at) is reported in not_run,
// and the perturbation verdict stands.
#include <fmt/format.h>

#include <algorithm>

#include "audit/checks/check.h"
#include "audit/checks/check_outputs.h"
#include "audit/checks/future_tables.h"
#include "audit/checks/json_fields.h"
#include "audit/precision_switch.h"

namespace grassaudit {
namespace {

Verdict verdict_of(int64_t horizon) { return horizon > 0 ? Verdict::kLeaky : Verdict::kCausal; }

// Gradients of y_t with respect to inputs s > t [L x L], relative to the largest gradient,
// against the same threshold as method 1. `mode_horizon`: method 1's horizon in that mode at L,
// which it must match (a leak only train mode has is no disagreement with eval-mode gradients).
GradientCheck gradient_check(Prober& prober, const InPrecision& in, AuditMode mode, int64_t L, double threshold,
                             int64_t mode_horizon) {
  const auto G = prober.gradient_map(in, L, mode);  // G[t][s], L x L
  double max_all = 0, max_future = 0;
  int64_t horizon = 0;
  for (int64_t t = 0; t < L; ++t)
    for (int64_t s = 0; s < L; ++s) max_all = std::max(max_all, G[t][s]);
  if (!(max_all > 0)) max_all = 1;
  int64_t reach = 0;  // the farthest exactly non-zero gradient
  for (int64_t t = 0; t < L; ++t)
    for (int64_t s = t + 1; s < L; ++s) {
      const double rel = G[t][s] / max_all;
      max_future = std::max(max_future, rel);
      if (rel > threshold) horizon = std::max(horizon, s - t);
      if (G[t][s] != 0.0) reach = std::max(reach, s - t);
    }
  GradientCheck g;
  g.ran = true;
  g.mode = mode_name(mode);
  g.precision = dtype_name(in.dtype());
  g.max_future_grad = max_future;
  g.leak_horizon = horizon;
  g.structural_horizon = reach;
  // A path that goes on past the nearer crossing decays through the threshold there: each
  // measure meets it at its own distance (the farther one may be the path's end, L - 1).
  const bool decaying = reach > std::min(horizon, mode_horizon);
  g.agrees = g.verdict() == verdict_of(mode_horizon) && (horizon == mode_horizon || decaying);
  return g;
}

class GradientCheckStep : public Check {
 public:
  const char* name() const override { return "gradient"; }
  bool wanted(const AuditRun& run) const override {
    return run.opt.gradient_check && run.target.supports_gradient();
  }
  void run(AuditRun& run) override {
    AuditResult& r = run.r;
    const InPrecision in = run.prec.in_decided();  // compared with the tables, in their precision
    const DecidedTables& d = *run.outputs.get<DecidedTables>();
    const CoupledModes* coupled = run.outputs.get<CoupledModes>();
    const Prober::IsolatedRows isolated(run.prober, coupled ? coupled->modes : std::vector<AuditMode>{});
    const int64_t L = run.L;
    const AuditMode grad_mode = run.opt.eval_mode() ? AuditMode::kEval : AuditMode::kTrain;
    const int64_t mode_h = table_horizon(d, grad_mode, L);
    try {
      r.gradient = gradient_check(run.prober, in, grad_mode, L, d.threshold, mode_h);
    } catch (const std::exception& e) {
      r.gradient = GradientCheck{};
      r.gradient.mode = mode_name(grad_mode);
      r.gradient.not_run = failure_line(e);
      if (r.gradient.not_run.empty()) r.gradient.not_run = "the gradient pass failed";
      try {
        run.target.restore_state();
      } catch (...) {
      }
    }
    // The gradient's path in its own mode against the horizon over every mode audited
    // (AuditResult::decaying).
    if (const auto reach = r.structural_horizon()) {
      if (run.outputs.get<FutureHorizon>()->horizon == 0 && *reach > 0)
        r.notes.push_back(fmt::format(
            "the float64 gradient of some outputs with respect to later inputs is not exactly zero (up to distance "
            "{}, at most {:.3g} of the largest gradient), below the {:.3g} threshold: arithmetic reaches the future "
            "at rounding level, or a dependence too weak to tell from rounding",
            *reach, r.gradient.max_future_grad, d.threshold));
    }
    if (r.gradient.ran && !r.gradient.agrees)
      r.notes.push_back(fmt::format("DISAGREEMENT: gradient method says {} (horizon {}, {} mode), perturbation at "
                                    "L={} in {} mode says horizon {}",
                                    verdict_name(r.gradient.verdict()), r.gradient.leak_horizon, r.gradient.mode, L,
                                    r.gradient.mode, mode_h));
  }
  void write_json(const AuditResult& r, nlohmann::json& j) const override {
    j["decaying"] = opt_json(r.decaying());
    j["structural_horizon"] = opt_json(r.structural_horizon());
    if (r.gradient.ran) {
      j["gradient_check"] = {{"verdict", verdict_name(r.gradient.verdict())},
                             {"leak_horizon", r.gradient.leak_horizon},
                             {"max_future_grad", r.gradient.max_future_grad},
                             {"precision", r.gradient.precision},
                             {"mode", r.gradient.mode},
                             {"structural_horizon", opt_json(r.gradient.structural_horizon)},
                             {"agrees", r.gradient.agrees}};
    } else if (!r.gradient.not_run.empty()) {
      j["gradient_check"] = {{"verdict", nullptr}, {"not_run", r.gradient.not_run}, {"mode", r.gradient.mode}};
    } else {
      j["gradient_check"] = nullptr;
    }
  }
  std::vector<std::string> thread_dependent() const override { return {"gradient_check.max_future_grad"}; }
  std::string summary(const AuditResult& r) const override {
    if (r.gradient.ran)
      return fmt::format("  gradient check: {} (horizon {}, max future gradient {:.3g}, {} mode, {})\n",
                         verdict_name(r.gradient.verdict()), r.gradient.leak_horizon, r.gradient.max_future_grad,
                         r.gradient.mode, r.gradient.agrees ? "agrees" : "DISAGREES");
    if (!r.gradient.not_run.empty()) return fmt::format("  gradient check: not run ({})\n", r.gradient.not_run);
    return "";
  }
  std::vector<Expectation> expectations() const override {
    return {
        {"decaying", [](const AuditResult& r) { return opt_json(r.decaying()); }},
        {"structural_horizon", [](const AuditResult& r) { return opt_json(r.structural_horizon()); }},
        // agrees | disagrees | not run (tried and failed) | off (not asked, or no gradient path)
        {"gradient_check",
         [](const AuditResult& r) {
           return nlohmann::json(r.gradient.ran ? (r.gradient.agrees ? "agrees" : "disagrees")
                                 : r.gradient.not_run.empty() ? "off"
                                                              : "not run");
         }},
    };
  }
};

}  // namespace

std::unique_ptr<Check> make_gradient_check() { return std::make_unique<GradientCheckStep>(); }

}  // namespace grassaudit
