#include "audit/precision_switch.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "audit/audit_cost.h"
#include "audit/audit_prober.h"
#include "audit/audit_result.h"
#include "audit/audit_target.h"

namespace grassaudit {

InPrecision::InPrecision(PrecisionSwitch& owner, at::ScalarType dtype)
    : owner_(owner), dtype_(dtype), outer_(owner.active_) {
  owner_.convert(dtype_);
  owner_.active_ = this;
}

InPrecision::~InPrecision() {
  owner_.active_ = outer_;
  if (!outer_) return;
  try {
    owner_.convert(outer_->dtype());
  } catch (...) {
  }
}

PrecisionSwitch::PrecisionSwitch(AuditTarget& target, Prober& prober, int64_t L)
    : target_(target), prober_(prober), L_(L), own_(target.dtype()) {}

PrecisionSwitch::~PrecisionSwitch() {
  try {  // uncounted: an audit that ended normally put the target back already (restore_own)
    if (target_.dtype() != own_) target_.to_dtype(own_, nullptr);
  } catch (...) {
  }
}

bool PrecisionSwitch::convert(at::ScalarType dtype, std::string* why) {
  return target_.dtype() == dtype || convert_counted(target_, dtype, why);
}

InPrecision PrecisionSwitch::in_own() { return InPrecision(*this, own_); }

InPrecision PrecisionSwitch::in_deciding() {
  establish();
  return InPrecision(*this, unavailable_ ? own_ : at::kDouble);
}

InPrecision PrecisionSwitch::in_decided() { return InPrecision(*this, decided_.value_or(own_)); }

void PrecisionSwitch::restore_own() {
  if (active_) throw std::logic_error("PrecisionSwitch::restore_own inside an open precision scope");
  convert(own_);
}

void PrecisionSwitch::establish() {
  if (established_) return;
  established_ = true;
  // The one-time cost of deciding in float64 (the first conversion, the forward test, the floor)
  // is the floor's, not the cost of the check that happened to need it first.
  const CostSection section("precision_floor");
  if (own_ == at::kDouble) {
    const InPrecision in(*this, own_);
    measure_floor(in);
    return;
  }
  std::string why;
  if (try_float64(&why)) return;
  unavailable_ = true;
  const InPrecision in(*this, own_);
  measure_floor(in);
  notes_.push_back(fmt::format(
      "float64 unavailable ({}): decided in {} against {:.3g}, {:g} x its measured rounding floor {:.3g} (at least "
      "{:g}); leaks smaller than that are not detectable",
      why, dtype_name(own_), threshold(), kFloorMargin, floor_->value, kLeakFloor32));
}

// The conversion, a forward, and (where the plain forward fails) a copy with float32 constants
// promoted; on success the floor measured in float64.
bool PrecisionSwitch::try_float64(std::string* why) {
  if (!convert(at::kDouble, why)) return false;
  const InPrecision in(*this, at::kDouble);
  const std::string failed = prober_.try_forward(in, L_);
  if (failed.empty()) {
    measure_floor(in);
    return true;
  }
  *why = "forward failed in float64: " + failed;
  std::string what;
  if (target_.promote_float32_constants(&what)) {
    if (prober_.try_forward(in, L_).empty()) {
      notes_.push_back(fmt::format("float64 decided on a copy of the model with {} (the plain float64 forward "
                                   "failed: {})",
                                   what, failed));
      measure_floor(in);
      return true;
    }
    *why += "; also with " + what;
  }
  return false;
}

void PrecisionSwitch::measure_floor(const InPrecision& in) {
  const bool float64 = in.float64();
  const double delta = float64 ? kFloorJitter64 : kFloorJitter32;
  const Prober::Floor f = prober_.precision_floor(in, L_, delta, kFloorSegments);
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
  if (!floor_) throw std::logic_error("PrecisionSwitch::threshold before the deciding precision was established");
  return floor_->threshold;
}

double PrecisionSwitch::horizon_threshold() const {
  if (!floor_) throw std::logic_error("PrecisionSwitch::horizon_threshold before the deciding precision was established");
  return floor_->horizon_threshold;
}

}  // namespace grassaudit
