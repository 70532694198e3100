#pragma once
// Internal to src/audit/checks: the decision rule every check follows (see causality_audit.h,
// "Rounding versus leak").
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "audit/audit_options.h"
#include "audit/effect_table.h"
#include "audit/precision_switch.h"

namespace grassaudit {

class Prober;
struct Pass;

template <class M>
struct Decided {
  M value;
  bool float64 = false;   // decided in float64 (also a float64 target's own screen)
  double threshold = 0;   // what value is judged against (0: exact zeros, nothing to decide)
};

enum class ThresholdKind { kComparison, kHorizon };  // PrecisionSwitch::threshold / horizon_threshold

// `screened` is measured in the target's own dtype; `moved` says whether anything in it is
// non-zero. Exact zeros stand (they are not rounding). Otherwise the deciding precision is
// established (the model's rounding floor measured, on the first decision) and `rerun` measures
// again in float64 -- unless the target is float64 already, whose screen decides; when float64
// is unavailable the screen stands, judged against the float32 threshold.
template <class M>
Decided<M> decide_screened(PrecisionSwitch& prec, M screened, bool moved, ThresholdKind kind,
                           const std::function<M(const InPrecision&)>& rerun) {
  Decided<M> d{std::move(screened), prec.own_dtype() == at::kDouble, 0.0};
  if (!moved) return d;
  const bool converts = !d.float64;
  {
    const InPrecision in = prec.in_deciding();
    d.float64 = in.float64();
    if (d.float64 && converts) d.value = rerun(in);
  }
  d.threshold = kind == ThresholdKind::kHorizon ? prec.horizon_threshold() : prec.threshold();
  return d;
}

// Measured straight in the deciding precision (established first): the comparisons across
// shapes, whose float32 rounding differs with the shape and so cannot screen (`measure` gets the
// threshold it will be judged against).
template <class M>
Decided<M> decide_direct(PrecisionSwitch& prec, ThresholdKind kind,
                         const std::function<M(const InPrecision&, double threshold)>& measure) {
  const InPrecision in = prec.in_deciding();
  const double threshold = kind == ThresholdKind::kHorizon ? prec.horizon_threshold() : prec.threshold();
  return Decided<M>{measure(in, threshold), in.float64(), threshold};
}

// Whether a check screens: asked for (--probe-every-row turns it off) and with trials to spare
// (with one trial the screen's rows are the whole table's).
inline bool screen_wanted(const AuditOptions& opt) { return opt.screen && opt.trials > 1; }

// The screen: trial 0's rows of each (mode, length) table of `tables` in order, every cut from
// `from_cut` on, in the target's own dtype (probes counted into `pass`). All exact zeros: those
// tables, which stand (nothing moved, so nothing is there to decide). nullopt at the first table
// that moved: the caller decides them again without the screen. Only whether anything moved is
// read: a pass of another shape rounds the rows it moves differently, but moves exactly the rows
// a pass of any shape moves. What a screen can miss: src/audit/README.md.
std::optional<std::vector<EffectTable>> screen_all_zero(PrecisionSwitch& prec, Prober& prober,
                                                        const std::vector<std::pair<AuditMode, int64_t>>& tables,
                                                        Side side, Pass& pass, int64_t from_cut = 1);

// The precision a decision was made in: "float64", or the target's own dtype's name.
std::string decided_in(const PrecisionSwitch& prec, bool float64);

}  // namespace grassaudit
