#pragma once
// Where one training step's time goes, op by op: the step runs once under LibTorch's (legacy,
// CPU) profiler and every op's SELF time (its range minus its children's) is summed by name and
// by category. A category is decided by the innermost enclosing range with a known name, so the
// multiplies inside aten::dropout count as dropout and the GEMMs inside the fused head as gemm.
// GEMMs are split by their input dtype (gemm_bf16, gemm_fp32: a RecordFunction observer notes it,
// the legacy profiler records none), float32 <-> bf16 conversions are "cast", the optimizer step
// "optimizer". Used by `grassaudit bench --model ... --profile-ops` to show which memory-bound work
// is left.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace grassaudit {

struct OpProfile {
  struct Op {
    std::string name;
    double self_ms = 0;
    int64_t calls = 0;
  };
  double wall_ms = 0;                       // the profiled call, profiler overhead included
  double recorded_ms = 0;                   // sum of the top-level ranges (= sum of all self times)
  std::vector<Op> ops;                      // by self time, largest first
  std::map<std::string, double> category_ms;  // gemm, layer_norm, gelu, dropout, softmax, ... other
};

// Runs `step` once under the profiler (this thread; CPU ops).
OpProfile profile_ops(const std::function<void()>& step);

// The category of a range name, or "" when the name decides nothing (look further out).
std::string op_category(const std::string& name);

// {"wall_ms", "recorded_ms", "categories": {name: {"ms", "share"}}, "top_ops": [{name, self_ms,
// share, calls}] (the first `top` ops)}; shares are of recorded_ms.
nlohmann::json to_json(const OpProfile& p, size_t top = 25);

}  // namespace grassaudit
