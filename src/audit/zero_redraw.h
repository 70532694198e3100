#pragma once
// Internal to src/audit: which parameter tensors the structural pass redraws, and with what
// (AuditTarget::redraw_zero_parameters), for every target that can set its parameters by name.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "audit/audit_target.h"

namespace grassaudit {

struct PlannedRedraw {
  RedrawnTensor record;  // name, shape, the siblings' RMS
  at::Tensor drawn;      // float64, N(0, scale^2): cast to the parameter's dtype when set
};

// params: (name, tensor) in the model's order, names dotted by module ("blocks.0.attn.out.weight").
// Every floating tensor that is exactly zero, biases aside, gets a draw at the RMS of the non-zero
// floating parameters under its closest enclosing module that has any (0.02 when all are zero),
// from a generator seeded with `seed`: the same weights and seed give the same draws.
std::vector<PlannedRedraw> plan_zero_redraws(const std::vector<std::pair<std::string, at::Tensor>>& params,
                                             uint64_t seed);

}  // namespace grassaudit
