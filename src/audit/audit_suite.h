#pragma once
// `grassaudit audit --suite FILE`: audits every case of a suite of control models and compares
// verdict, leak horizon (and rounding_only where given) with the expectation. Format:
// {"suite": name, "cases": [{"name", "model" (relative to the suite file), "input", "seq_len",
//  "mode": eval|train|both, "contract"?: {"lookahead"?, "window"?},
//  "expect": {"verdict", "leak_horizon", "rounding_only"?, "violations"? (kinds, in the audit's
//  order: future, length, batch, window), "length_dependent"?, "batch_coupled"?, "past_horizon"?}}, ...]}
// Unknown keys inside a case are allowed (generators record how expectations were checked).
#include <string>
#include <vector>

#include "audit/causality_audit.h"

namespace grassaudit {

struct SuiteCaseResult {
  std::string name;
  std::string expected_verdict, verdict;
  int64_t expected_horizon = 0, horizon = 0;
  bool rounding_only = false;
  bool pass = false;
  double seconds = 0;
  std::string detail;  // why it failed, if it did
};

// base: options shared by every case (trials, batch, seed); seq_len and modes come from the case.
std::vector<SuiteCaseResult> run_audit_suite(const std::string& suite_path, const AuditOptions& base);

}  // namespace grassaudit
