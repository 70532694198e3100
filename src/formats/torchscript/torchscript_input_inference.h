#pragma once
// What a TorchScript file says about forward's arguments when no --input is given. The file
// declares no dtype or shape for a Tensor argument, so what the argument is comes from the code
// that reads it, and only where that is certain:
//   indices of aten::embedding (or index_select, dim 0) on a parameter    tokens:V, V its rows
//   read first by aten::linear / matmul with a parameter, layer_norm over
//   [C], or (time moved last) conv1d on a parameter                         features:C
//   a Tensor argument without a default named like a mask                   ones
// An argument with a default that is none of these is left to its default; any other is a
// finding without a binding, with what to pass.
#include <cstdint>
#include <vector>

#include "formats/input_findings.h"

namespace torch::jit {
struct Module;
}

namespace grassaudit {

std::vector<InputFinding> find_torchscript_inputs(const torch::jit::Module& module, int64_t time_axis);

}  // namespace grassaudit
