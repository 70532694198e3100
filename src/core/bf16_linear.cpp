#include "core/bf16_linear.h"

#include <ATen/ATen.h>

#include "runtime/runtime.h"

namespace grassaudit {

at::Tensor linear_rows(torch::nn::LinearImpl& linear, const at::Tensor& x) {
  if (!(x.device().is_cpu() && cpu_bf16_autocast() && linear.bias.defined() && x.dim() >= 2))
    return linear.forward(x);
  const int64_t in = x.size(-1), out = linear.weight.size(0);
  auto sizes = x.sizes().vec();
  sizes.back() = out;
  return at::addmm(linear.bias, x.reshape({-1, in}), linear.weight.t()).view(sizes);  // [rows, out] -> [..., out]
}

}  // namespace grassaudit
