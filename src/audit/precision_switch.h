#pragma once
// Internal to src/audit: switching a target between its own dtype (the float32 screen) and
// float64 (the decisive re-run of whatever moved). float64 counts as available only when the
// conversion AND a forward pass in float64 both work: a traced third-party model may convert
// its parameters and still fail when run (float32 constants baked into the trace; then a copy
// with those constants promoted is tried). Either failure falls back to deciding in the own dtype.
//
// The threshold is never assumed: the first time a decision is needed, the model's rounding
// floor is measured in the deciding precision (Prober::precision_floor).
//   Horizons (the future and past tables, the gradient method) are decided against
//   kFloorMargin x max(floor, kFloat64Unit) in float64: a dependence that decays rather than
//   stops (a recurrence, a bidirectional RNN) is followed down to what the model's own rounding
//   can tell apart, so the horizon is the model's, not a fixed minimum's. Where no floor could be
//   measured, kLeakThreshold64 (1e-9) stands.
//   The comparisons across shapes (batch rows, a prefix against the full run, step against
//   forward) are decided against max(kLeakThreshold64, kFloorMargin x floor): two differently
//   shaped computations round differently by more than one shape's floor.
// The float32 fallback decides everything against max(kLeakFloor32, kFloorMargin x floor). A
// true float64 model floors at ~1e-16 (horizon threshold ~1e-14); one with a float32 island (a
// float32 softmax, a .float() call) floors at ~1e-8 and is said to.
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "audit/audit_prober.h"
#include "audit/audit_target.h"
#include "audit/audit_options.h"
#include "audit/audit_result.h"

namespace grassaudit {

// Relative jitter step of the floor measurement: above an ulp of float32 (6e-8 .. 1.2e-7), so
// the values a forward computes move by an ulp of float32 or more at every step and round
// afresh, a float32 island included; the Richardson-cancelled smooth terms (O(delta^4)) are
// then far below any floor. As small as that allows, because what a step does to a
// piecewise-linear model is cross a kink (a ReLU unit whose input passes zero) with a chance
// proportional to the step: each segment of the measurement (Prober::precision_floor) spans 4
// steps, a fifth of what the single stencil at 1e-6 spanned. float32 (when float64 is
// unavailable): ~10 float32 ulps.
constexpr double kFloorJitter64 = 2e-7;
constexpr double kFloorJitter32 = 1e-6;
// Segments along the jitter line: a kink-crossing residual counts only if every one of them
// crosses a kink on the same output (chance p^G for a chance p per segment), while rounding is
// in all of them. 8 segments: 33 forward passes of 2 rows at the main length.
constexpr int kFloorSegments = 8;
constexpr double kFloorMargin = 100;        // threshold = max(base, margin x floor)
constexpr double kLeakFloor32 = 1e-6;       // float32 fallback: the least threshold (~17 ulps)
constexpr double kFloat32SizedFloor = 1e-11;  // a float64 floor above this is float32-sized
// The least float64 floor a horizon is decided above: one float64 ulp relative to the output
// scale (a floor measured below it -- a model whose jitter rounds nothing -- counts as this).
constexpr double kFloat64Unit = 2.220446049250313e-16;

// "float64", "float32", or LibTorch's name of another dtype.
std::string dtype_name(at::ScalarType t);

class PrecisionSwitch {
 public:
  // L: the length the float64 forward test and the floor measurement run at (the audit's main length).
  PrecisionSwitch(AuditTarget& target, Prober& prober, int64_t L);
  at::ScalarType own() const { return own_; }
  // The precision that decided the future tables (the future check records it): the checks that
  // run in the decisive precision (Check::in_decisive_precision) are put there. own() until then.
  void record_decisive(at::ScalarType dtype) { decisive_ = dtype; }
  at::ScalarType decisive() const { return decisive_.value_or(own_); }
  void to_own();
  // Puts the target in float64; false (target left in its own dtype, note recorded) when
  // float64 is unavailable. True at once for a float64 target. The first call measures the
  // floor of the precision that will decide.
  bool to_float64();
  bool unavailable() const { return unavailable_; }
  // The thresholds after a decision (to_float64 called), see the top: the comparisons across
  // shapes (batch, length, incremental, property search) and the horizons.
  double threshold() const;
  double horizon_threshold() const;
  // The measured floor (after the first to_float64), else nullopt.
  const std::optional<PrecisionFloor>& floor() const { return floor_; }
  const std::vector<std::string>& notes() const { return notes_; }

 private:
  void measure_floor(bool float64);
  AuditTarget& target_;
  Prober& prober_;
  int64_t L_;
  at::ScalarType own_;
  std::optional<at::ScalarType> decisive_;
  bool tested_ = false;
  bool unavailable_ = false;
  std::optional<PrecisionFloor> floor_;
  std::vector<std::string> notes_;
};

}  // namespace grassaudit
