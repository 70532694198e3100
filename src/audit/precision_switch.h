#pragma once
// Internal to src/audit: switching a target between its own dtype (the float32 screen) and
// float64 (the decisive re-run of whatever moved). float64 counts as available only when the
// conversion AND a forward pass in float64 both work: a traced third-party model may convert
// its parameters and still fail when run (float32 constants baked into the trace). Either
// failure falls back to deciding in the own dtype with kLeakThreshold32, and says so once.
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <string>
#include <vector>

#include "audit/audit_prober.h"
#include "audit/audit_target.h"

namespace grassaudit {

class PrecisionSwitch {
 public:
  // L: the length the float64 forward test runs at (the audit's main length).
  PrecisionSwitch(AuditTarget& target, Prober& prober, int64_t L);
  at::ScalarType own() const { return own_; }
  void to_own();
  // Puts the target in float64; false (target left in its own dtype, note recorded) when
  // float64 is unavailable. True at once for a float64 target.
  bool to_float64();
  bool unavailable() const { return unavailable_; }
  // The threshold an effect is judged by after a decision: float64 decided -> kLeakThreshold64,
  // unavailable -> kLeakThreshold32.
  double threshold() const;
  const std::vector<std::string>& notes() const { return notes_; }

 private:
  AuditTarget& target_;
  Prober& prober_;
  int64_t L_;
  at::ScalarType own_;
  bool tested_ = false;
  bool unavailable_ = false;
  std::vector<std::string> notes_;
};

}  // namespace grassaudit
