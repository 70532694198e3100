#pragma once
// A Linear layer over the last dimension of any [..., in] tensor, for the bf16 training path.
//
// LibTorch's functional linear runs inputs of more than two dims as matmul and `output += bias`;
// under CPU bf16 autocast the matmul's output is bf16 and the in-place add with the float32 bias
// converts the whole output to float32 and back (two extra passes over a [B, L, out] tensor, in
// backward too). Under CPU bf16 autocast linear_rows is one at::addmm over the flattened rows, the
// bias added inside the bf16 GEMM; everywhere else it is the module's own forward, so float32
// arithmetic is exactly what it was.
#include <torch/nn/modules/linear.h>

namespace grassaudit {

// x: [..., in] -> [..., out].
at::Tensor linear_rows(torch::nn::LinearImpl& linear, const at::Tensor& x);

}  // namespace grassaudit
