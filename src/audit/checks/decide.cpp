// The decision rule's shared steps (decide.h): the screen and the name of a decision's precision.
#include "audit/checks/decide.h"

#include "audit/audit_prober.h"

namespace grassaudit {

std::optional<std::vector<EffectTable>> screen_all_zero(PrecisionSwitch& prec, Prober& prober,
                                                        const std::vector<std::pair<AuditMode, int64_t>>& tables,
                                                        Side side, Pass& pass, int64_t from_cut) {
  const InPrecision own = prec.in_own();
  std::vector<EffectTable> zeros;
  for (const auto& [mode, len] : tables) {
    EffectTable t = prober.screen_table(own, mode, len, pass, side, from_cut);
    if (t.max() > 0.0) return std::nullopt;
    zeros.push_back(std::move(t));
  }
  return zeros;
}

std::string decided_in(const PrecisionSwitch& prec, bool float64) {
  return float64 ? "float64" : dtype_name(prec.own_dtype());
}

}  // namespace grassaudit
