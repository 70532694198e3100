#pragma once
// Internal to src/audit/checks: the future check's decided (mode, length) tables, which the
// length check (its guard), the gradient check (its comparison) and the structural pass read.
#include <cstdint>
#include <map>
#include <utility>
#include <string>
#include <vector>

#include "audit/audit_prober.h"

namespace grassaudit {

struct DecidedTables {
  std::vector<int64_t> lens_planned;  // the schedule
  std::vector<AuditMode> modes_planned;
  std::vector<int64_t> lens_run;      // what was audited: shorter than planned if stopped early
  std::vector<AuditMode> modes_run;
  bool stopped_early = false;
  Pass first;                         // float32 (the target's own dtype): probes, largest effect
  Pass decisive;                      // the tables the verdict uses, in the precision that decided
  double threshold = 0.0;             // that precision's leak threshold (stays 0 while all is exact zeros)
  // The routing search's single-position cells merged into `decisive` at the main length, by
  // (mode, L): where the evidence came from one replaced position rather than a cut.
  std::map<std::pair<AuditMode, int64_t>, EffectTable> searched;
  std::vector<std::string> notes;
};

// Method 1's horizon in one mode at one length (0 when that table was not audited).
int64_t table_horizon(const DecidedTables& d, AuditMode mode, int64_t len);

}  // namespace grassaudit
