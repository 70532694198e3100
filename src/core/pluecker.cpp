#include "core/pluecker.h"

#include <ATen/ATen.h>

#include <vector>

namespace grassaudit {

std::pair<at::Tensor, at::Tensor> pluecker_pair_indices(int64_t r) {
  std::vector<int64_t> I, J;
  I.reserve(static_cast<size_t>(pluecker_dim(r)));
  J.reserve(static_cast<size_t>(pluecker_dim(r)));
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = i + 1; j < r; ++j) {
      I.push_back(i);
      J.push_back(j);
    }
  auto opts = at::TensorOptions().dtype(at::kLong);
  return {at::tensor(I, opts), at::tensor(J, opts)};
}

at::Tensor pluecker_coords(const at::Tensor& a, const at::Tensor& b) {
  const int64_t r = a.size(-1);
  auto [I, J] = pluecker_pair_indices(r);
  I = I.to(a.device());
  J = J.to(a.device());
  return a.index_select(-1, I) * b.index_select(-1, J) - a.index_select(-1, J) * b.index_select(-1, I);
}

at::Tensor wedge_norm_from_gram(const at::Tensor& a2, const at::Tensor& b2, const at::Tensor& ab,
                                double eps) {
  return (a2 * b2 - ab * ab).clamp_min(eps * eps).sqrt();
}

}  // namespace grassaudit
