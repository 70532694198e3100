#pragma once
// Internal to src/audit: the properties beyond "does y_t read the future" (see the top of
// causality_audit.h): batch independence, length independence, the past horizon, and the list
// of violations of the declared contract. Each is decided like the future tables: a float32
// screen, a float64 re-run of whatever moved (PrecisionSwitch), exact zeros standing as they are.
#include <cstdint>
#include <vector>

#include "audit/audit_prober.h"
#include "audit/causality_audit.h"
#include "audit/precision_switch.h"

namespace grassaudit {

std::string dtype_name(at::ScalarType t);

// Batch independence in each mode at length L. A coupled mode is isolated in the prober (its
// horizons are then measured one row per pass). Sets r.batch_coupled / r.batch_evidence.
void check_batch(PrecisionSwitch& prec, Prober& prober, const std::vector<AuditMode>& modes, int64_t L,
                 AuditResult& r);

// The prefix lengths the length check runs: every p in 2..L-1 up to 32 of them, else 32
// spread evenly over 2..L-1 (both ends included).
std::vector<int64_t> prefix_schedule(int64_t L);

// Length independence at L (eval mode), comparing positions t < p - guard with guard =
// max(lookahead, future horizon): what the future dependence explains is not a length effect.
// Sets r.length_dependent / r.length_evidence (nullopt when nothing could be compared).
void check_length(PrecisionSwitch& prec, Prober& prober, int64_t L, int64_t guard, AuditResult& r);

// The past horizon over the (mode, length) tables: float32 cells >= kPastCertain32 are real
// dependences (rounding cannot move an output by 1e-3 of its scale); smaller non-zero cells
// beyond that horizon are re-run in float64. Sets r.past_horizon and returns where it was seen.
constexpr double kPastCertain32 = 1e-3;
Evidence measure_past_horizon(PrecisionSwitch& prec, Prober& prober, const std::vector<AuditMode>& modes,
                              const std::vector<int64_t>& lens, AuditResult& r);

// The violations of the contract in r (lookahead, window) from what was measured, and the
// verdict: "leaky" exactly when there is one.
void judge_contract(const Evidence& future_evidence, const Evidence& past_evidence, AuditResult& r);

}  // namespace grassaudit
