#pragma once
// `grassaudit audit --suite FILE`: audits every case of a suite of control models and compares
// verdict, leak horizon and every expectation given with what the audit found. Format:
// {"suite": name, "cases": [{"name", "model" (relative to the suite file), "input" (or "inputs": one
//  [NAME=]KIND per forward argument), "time_axis"?, "output"? (one leaf path), "seq_len",
//  "seq_lens"? (the lengths to audit instead of the schedule: a traced file runs at its traced
//  length only), "mode": eval|train|both, "contract"?: {"lookahead"?, "window"?},
//  "gradient_check"? (false: the gradient method off for this case, --no-gradient-check),
//  "weights_as_given"? (true: no structural pass, --weights-as-given),
//  "expect": {"refused": state|nondeterministic|incremental} (the audit must refuse it, exit 2,
//  for that reason), or {"verdict", "leak_horizon", "leak_horizon_within"?, "violations"? (kinds,
//  in the order the JSON lists them), and any field the audit or one of its checks answers
//  (Check::expectations(), audit/checks/check.h): an unknown field is an error}}, ...]}
// A suite may name its "producer" ("PyTorch 1.13.0a0"): rounding_only is then compared only on a
// LibTorch of that major.minor (it describes the float32 kernels, not the model).
// Unknown keys inside a case are allowed (generators record how expectations were checked).
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "audit/audit_result.h"
#include "audit/model_file_target.h"

namespace grassaudit {

struct SuiteCaseResult {
  std::string name;
  std::string expected_verdict, verdict;
  int64_t expected_horizon = 0, horizon = 0;
  bool rounding_only = false;
  bool pass = false;
  double seconds = 0;
  std::string detail;  // why it failed, if it did
  // The audit's result (whole-model checks included); nullopt when the audit refused the model,
  // whose one line is then in `refusal`.
  std::optional<AuditResult> result;
  std::string refusal;
  bool train_from_eval = false;  // the train-mode tables were the eval-mode ones (proof)
};

// How the suite's model files are opened (formats/model_file.h: open_model_file); the engine
// reads no format itself.
using ModelFileOpener = std::function<std::unique_ptr<ModelFileTarget>(
    const std::string& path, const std::vector<InputBinding>& inputs, int64_t time_axis, double feature_scale,
    const StreamingOptions& streaming)>;

// base: options shared by every case (trials, batch, seed); seq_len and modes come from the case.
std::vector<SuiteCaseResult> run_audit_suite(const std::string& suite_path, const AuditOptions& base,
                                             const ModelFileOpener& open);

}  // namespace grassaudit
