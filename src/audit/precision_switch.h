#pragma once
// Internal to src/audit: the precision an audit runs in, as a type. A target runs in its own
// dtype (the float32 screen) or in float64 (the decisive re-run of whatever moved), and only
// inside a scope (InPrecision) that the switch hands out. float64 counts as available only when the
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

#include "audit/audit_cost.h"  // dtype_name
#include "audit/audit_result.h"
#include "util/non_copyable.h"

namespace grassaudit {

class AuditTarget;
class Prober;

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

class PrecisionSwitch;

// The precision the target runs in while this lives: the guard PrecisionSwitch hands out (in_own,
// in_deciding, in_decided) and the token every probe takes (the Prober's methods), so that each
// probe states the precision it runs in and runs only there. When it ends, the target goes back
// to the precision of the scope around it; with none around it, the target stays where it is
// until the next scope asks (a conversion is a pass over all of the model's memory, so two
// scopes in a row in float64 convert once, and the driver puts the model back at the end).
class InPrecision : NonCopyable {
 public:
  at::ScalarType dtype() const { return dtype_; }
  bool float64() const { return dtype_ == at::kDouble; }
  ~InPrecision();

 private:
  friend class PrecisionSwitch;
  InPrecision(PrecisionSwitch& owner, at::ScalarType dtype);
  PrecisionSwitch& owner_;
  at::ScalarType dtype_;
  const InPrecision* outer_;
};

// The one place that changes the target's dtype during an audit, and the step that settles which
// precision decides (establish: whether float64 runs, and the model's rounding floor there).
class PrecisionSwitch : NonCopyable {
 public:
  // L: the length the float64 forward test and the floor measurement run at (the audit's main length).
  PrecisionSwitch(AuditTarget& target, Prober& prober, int64_t L);
  // Puts the target back in its own dtype however the audit ends.
  ~PrecisionSwitch();

  at::ScalarType own_dtype() const { return own_; }

  // The target's own dtype: the float32 screen.
  InPrecision in_own();
  // The deciding precision: float64 where the target runs there, else its own dtype (established
  // first, on the first call).
  InPrecision in_deciding();
  // The precision that decided the future tables (record_decided; the own dtype until then): the
  // checks that compare with those tables (the gradient map, the structural pass) run there.
  InPrecision in_decided();
  void record_decided(at::ScalarType dtype) { decided_ = dtype; }

  // The step that settles the deciding precision, once (its cost is "precision_floor"): float64
  // counts as available when the conversion AND a forward in float64 both work (a traced model
  // whose float32 constants break the float64 forward gets a copy with them promoted); then the
  // model's rounding floor is measured in the precision that will decide. Every threshold comes
  // from it. Leaves the target in the deciding precision (or the enclosing scope's, if one is open).
  void establish();
  bool established() const { return established_; }
  // Whether float64 was found unavailable (established, and deciding in the own dtype).
  bool unavailable() const { return unavailable_; }
  // The thresholds of the deciding precision (established only; see the top): the comparisons
  // across shapes (batch, length, incremental, property search) and the horizons.
  double threshold() const;
  double horizon_threshold() const;
  // The measured floor (after establish), else nullopt.
  const std::optional<PrecisionFloor>& floor() const { return floor_; }
  const std::vector<std::string>& notes() const { return notes_; }

  // The target back in its own dtype (counted): the driver's last step, before the costs are taken.
  void restore_own();

 private:
  friend class InPrecision;
  // Puts the target in `dtype` (counted) unless it is there; false when the conversion failed.
  bool convert(at::ScalarType dtype, std::string* why = nullptr);
  bool try_float64(std::string* why);
  void measure_floor(const InPrecision& in);
  AuditTarget& target_;
  Prober& prober_;
  int64_t L_;
  at::ScalarType own_;
  std::optional<at::ScalarType> decided_;
  const InPrecision* active_ = nullptr;  // the innermost open scope
  bool established_ = false;
  bool unavailable_ = false;
  std::optional<PrecisionFloor> floor_;
  std::vector<std::string> notes_;
};

}  // namespace grassaudit
