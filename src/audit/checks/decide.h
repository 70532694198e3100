#pragma once
// Internal to src/audit/checks: the decision rule every check follows (see causality_audit.h,
// "Rounding versus leak").
#include <functional>

#include "audit/precision_switch.h"

namespace grassaudit {

template <class M>
struct Decided {
  M value;
  bool float64 = false;   // decided in float64 (also a float64 target's own screen)
  double threshold = 0;   // what value is judged against (0: exact zeros, nothing to decide)
};

enum class ThresholdKind { kComparison, kHorizon };  // PrecisionSwitch::threshold / horizon_threshold

// `screened` is measured in the target's own dtype; `moved` says whether anything in it is
// non-zero. Exact zeros stand (they are not rounding). Otherwise the target goes to float64
// (measuring its rounding floor on the first call) and `rerun` measures again there -- unless
// the target is float64 already, whose screen decides; when float64 is unavailable the screen
// stands, judged against the float32 threshold. The target is left in the deciding precision.
template <class M>
Decided<M> decide_screened(PrecisionSwitch& prec, M screened, bool moved, ThresholdKind kind,
                           const std::function<M()>& rerun) {
  Decided<M> d{std::move(screened), prec.own() == at::kDouble, 0.0};
  if (!moved) return d;
  const bool converts = !d.float64;
  d.float64 = prec.to_float64();
  if (d.float64 && converts) d.value = rerun();
  d.threshold = kind == ThresholdKind::kHorizon ? prec.horizon_threshold() : prec.threshold();
  return d;
}

// The precision a decision was made in: "float64", or the target's own dtype's name.
std::string decided_in(const PrecisionSwitch& prec, bool float64);

}  // namespace grassaudit
