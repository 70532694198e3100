#include "audit/precision_switch.h"

#include <fmt/format.h>

#include <algorithm>

#include "audit/audit_result.h"

namespace grassaudit {

std::string dtype_name(at::ScalarType t) {
  return t == at::kDouble ? "float64" : t == at::kFloat ? "float32" : c10::toString(t);
}

PrecisionSwitch::PrecisionSwitch(AuditTarget& target, Prober& prober, int64_t L)
    : target_(target), prober_(prober), L_(L), own_(target.dtype()) {}

void PrecisionSwitch::to_own() {
  if (target_.dtype() != own_) convert_counted(target_, own_, nullptr);
}

bool PrecisionSwitch::to_float64() {
  if (own_ == at::kDouble) {
    if (!floor_) {
      const CostSection section("precision_floor");
      measure_floor(true);
    }
    return true;
  }
  if (unavailable_) return false;
  if (tested_ && target_.dtype() == at::kDouble) return true;  // there already: no conversion
  std::string why;
  if (tested_ && convert_counted(target_, at::kDouble, &why)) return true;
  // The one-time cost of deciding in float64 (the first conversion, the forward test, the
  // floor) is the floor's, not the cost of the check that happened to need it first.
  const CostSection section("precision_floor");
  if (!tested_ && convert_counted(target_, at::kDouble, &why)) {
    tested_ = true;
    const std::string failed = prober_.try_forward(L_);
    if (failed.empty()) {
      measure_floor(true);
      return true;
    }
    why = "forward failed in float64: " + failed;
    std::string what;
    if (target_.promote_float32_constants(&what)) {
      if (prober_.try_forward(L_).empty()) {
        notes_.push_back(fmt::format("float64 decided on a copy of the model with {} (the plain float64 forward "
                                     "failed: {})",
                                     what, failed));
        measure_floor(true);
        return true;
      }
      why += "; also with " + what;
    }
    to_own();
  }
  unavailable_ = true;
  measure_floor(false);
  notes_.push_back(fmt::format(
      "float64 unavailable ({}): decided in {} against {:.3g}, {:g} x its measured rounding floor {:.3g} (at least "
      "{:g}); leaks smaller than that are not detectable",
      why, dtype_name(own_), threshold(), kFloorMargin, floor_->value, kLeakFloor32));
  return false;
}

void PrecisionSwitch::measure_floor(bool float64) {
  const double delta = float64 ? kFloorJitter64 : kFloorJitter32;
  const Prober::Floor f = prober_.precision_floor(L_, delta, kFloorSegments);
  PrecisionFloor pf;
  pf.precision = float64 ? "float64" : dtype_name(own_);
  pf.measured = f.measurable;
  pf.value = f.value;
  if (f.measurable) {
    std::string what = f.tensors > 0 ? fmt::format("{} parameter tensor{}", f.tensors, f.tensors == 1 ? "" : "s") : "";
    if (f.inputs) what += what.empty() ? "the features input" : " and the features input";
    pf.method = fmt::format(
        "{} scaled by 1 + k*{:g}*N(0,1), k = -{}..{} in {} segments of 5 samples, eval mode, 2 rows at L={}: max over "
        "outputs of the least over segments of |D2(d) - D2(2d)/4| relative to max |y|, D2 the second difference "
        "(smooth terms cancel, rounding stays; a kink crossed in one segment does not reach the others)",
        what, delta, 2 * f.segments, 2 * f.segments, f.segments, L_);
  } else {
    pf.method = "not measured: " + f.why;
  }
  const double base = float64 ? kLeakThreshold64 : kLeakFloor32;
  pf.threshold = std::max(base, kFloorMargin * pf.value);
  pf.horizon_threshold = !float64 ? pf.threshold
                         : pf.measured ? kFloorMargin * std::max(pf.value, kFloat64Unit)
                                       : kLeakThreshold64;
  pf.float32_sized = float64 && pf.value > kFloat32SizedFloor;
  floor_ = pf;
  if (pf.float32_sized)
    notes_.push_back(fmt::format(
        "precision floor: the float64 forward rounds at {:.3g} (relative), float32-sized: part of the model computes "
        "in a lower precision after conversion to float64 (a float32 softmax, a .float() call, a float32 constant); "
        "every check was decided against {:.3g} instead of {:g}, so dependences smaller than that are not "
        "detectable",
        pf.value, pf.threshold, kLeakThreshold64));
}

double PrecisionSwitch::threshold() const {
  if (floor_) return floor_->threshold;
  return unavailable_ ? kLeakFloor32 : kLeakThreshold64;
}

double PrecisionSwitch::horizon_threshold() const {
  if (floor_) return floor_->horizon_threshold;
  return threshold();
}

}  // namespace grassaudit
