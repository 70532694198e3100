#include "audit/dtype_twins.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

namespace grassaudit {

at::Tensor DtypeTwins::convert(const std::string& key, const at::Tensor& current, at::ScalarType dtype) {
  at::NoGradGuard no_grad;
  if (current.scalar_type() == dtype) return current;
  at::Tensor& spare = spare_[key];
  at::Tensor out;
  if (spare.defined() && spare.scalar_type() == dtype && spare.device() == current.device() &&
      spare.sizes() == current.sizes() &&
      spare.strides() == current.strides()) {
    spare.copy_(current);
    out = spare;
  } else {
    out = current.to(dtype);
  }
  spare = current.detach();
  return out;
}

}  // namespace grassaudit
