#include "audit/precision_switch.h"

#include <fmt/format.h>

#include "audit/causality_audit.h"

namespace grassaudit {

PrecisionSwitch::PrecisionSwitch(AuditTarget& target, Prober& prober, int64_t L)
    : target_(target), prober_(prober), L_(L), own_(target.dtype()) {}

void PrecisionSwitch::to_own() {
  if (target_.dtype() != own_) target_.to_dtype(own_, nullptr);
}

bool PrecisionSwitch::to_float64() {
  if (own_ == at::kDouble) return true;
  if (unavailable_) return false;
  std::string why;
  if (target_.to_dtype(at::kDouble, &why)) {
    if (tested_) return true;
    tested_ = true;
    const std::string failed = prober_.try_forward(L_);
    if (failed.empty()) return true;
    why = "forward failed in float64: " + failed;
    std::string what;
    if (target_.promote_float32_constants(&what)) {
      if (prober_.try_forward(L_).empty()) {
        notes_.push_back(fmt::format("float64 decided on a copy of the model with {} (the plain float64 forward "
                                     "failed: {})",
                                     what, failed));
        return true;
      }
      why += "; also with " + what;
    }
    to_own();
  }
  unavailable_ = true;
  notes_.push_back(fmt::format(
      "float64 unavailable ({}): decided in float32 with threshold {:g}; leaks smaller than that are not detectable",
      why, kLeakThreshold32));
  return false;
}

double PrecisionSwitch::threshold() const { return unavailable_ ? kLeakThreshold32 : kLeakThreshold64; }

}  // namespace grassaudit
