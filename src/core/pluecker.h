#pragma once
// Pluecker coordinates of the 2-plane spanned by a pair of rank-r vectors (SPEC.md section 1):
// p_ij = a_i b_j - a_j b_i for 0 <= i < j < r, C(r, 2) coordinates in row-major (i, j) order.
#include <cstdint>
#include <utility>

#include <ATen/core/Tensor.h>

namespace grassaudit {

inline int64_t pluecker_dim(int64_t r) { return r * (r - 1) / 2; }

// Index tensors (I, J), each [C(r,2)] int64, with I[k] < J[k] in row-major order.
std::pair<at::Tensor, at::Tensor> pluecker_pair_indices(int64_t r);

// a, b: [..., r] -> p: [..., C(r,2)]. The literal definition, used by the reference path.
at::Tensor pluecker_coords(const at::Tensor& a, const at::Tensor& b);

// max(||a ^ b||, eps) from Lagrange's identity ||a^b||^2 = |a|^2 |b|^2 - (a.b)^2, without
// forming p. a2, b2, ab: [...] squared norms and dot product -> [...].
// Written as sqrt(max(x, eps^2)) so the gradient stays finite where the pair is parallel.
at::Tensor wedge_norm_from_gram(const at::Tensor& a2, const at::Tensor& b2, const at::Tensor& ab,
                                double eps);

}  // namespace grassaudit
