#pragma once
// Internal to src/audit/checks: what a check hands the checks after it (CheckOutputs in check.h),
// one type per output, each put by one check.
#include <cstdint>
#include <optional>
#include <vector>

#include "audit/audit_options.h"
#include "audit/audit_result.h"
#include "audit/checks/future_tables.h"  // DecidedTables: put by the future check

namespace grassaudit {

// Put by the batch check: the modes whose rows mix. The checks that probe rows of a pass (the
// future and past tables, the gradient map) probe those modes one row per pass
// (Prober::IsolatedRows), so what one row's inputs do to another never reads as a time dependence.
struct CoupledModes {
  std::vector<AuditMode> modes;
};

// Put by the future check: where the leak horizon was seen (the future violation's evidence).
struct FutureEvidence {
  Evidence evidence;
};

// Put by the future check: the leak horizon its tables decided and the lengths they ran at.
struct FutureHorizon {
  int64_t horizon = 0;
  std::vector<int64_t> lens;
};

// Put by the future check: the selections over time its first forward at the main length ran
// (Prober::watch_ops; nullopt: that forward was not watched), which both sides' routing search
// starts from.
struct WatchedOps {
  std::optional<std::vector<DiscreteOp>> ops;
};

// Put by the past check: where the past horizon was seen (the window violation's evidence).
struct PastEvidence {
  Evidence evidence;
};

}  // namespace grassaudit
