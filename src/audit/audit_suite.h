#pragma once
// `grassaudit audit --suite FILE`: audits every case of a suite of control models and compares
// verdict, leak horizon (and rounding_only where given) with the expectation. Format:
// {"suite": name, "cases": [{"name", "model" (relative to the suite file), "input" (or "inputs": one
//  [NAME=]KIND per forward argument), "time_axis"?, "output"? (one leaf path), "seq_len",
//  "seq_lens"? (the lengths to audit instead of the schedule: a traced file runs at its traced
//  length only), "mode": eval|train|both, "contract"?: {"lookahead"?, "window"?},
//  "gradient_check"? (false: the gradient method off for this case, --no-gradient-check),
//  "weights_as_given"? (true: no structural pass, --weights-as-given),
//  "expect": {"refused": state|nondeterministic} (the audit must refuse it, exit 2, for that reason), or
//  {"verdict", "leak_horizon", "rounding_only"?, "violations"? (kinds, in the audit's
//  order: future, length, batch, window), "length_dependent"?, "batch_coupled"?, "past_horizon"?,
//  "train_from_eval"? (the train-mode proof holds: train mode may be taken from eval mode),
//  "gradient_check"? (agrees | disagrees | not run | off: what the gradient method said),
//  "structural"? (leaky | causal | none: the structural pass's verdict, none when it did not run)}}, ...]}
// A suite may name its "producer" ("PyTorch 1.13.0a0"): rounding_only is then compared only on a
// LibTorch of that major.minor (it describes the float32 kernels, not the model).
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
  // The audit's whole JSON (to_json; incremental included), or the refusal's message: what two
  // audit settings of the same case are compared on (tests/audit/test_train_mode_proof.cpp).
  std::string facts_json;
  bool train_from_eval = false;  // the train-mode tables were the eval-mode ones (proof)
};

// base: options shared by every case (trials, batch, seed); seq_len and modes come from the case.
std::vector<SuiteCaseResult> run_audit_suite(const std::string& suite_path, const AuditOptions& base);

}  // namespace grassaudit
