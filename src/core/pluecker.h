#pragma once
// Pluecker coordinates of the 2-plane spanned by a pair of rank-r vectors (SPEC.md section 1):
// p_ij = a_i b_j - a_j b_i for 0 <= i < j < r, C(r, 2) coordinates in row-major (i, j) order.
#include <cstdint>
#include <utility>
#include <vector>

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

namespace grassaudit {

// Fast kernels with hand-written backward passes (custom autograd Functions), used by the
// Grassmann layer's fast path. Both are exact rewrites of autograd compositions and are
// checked against them (tests/core, tests/bench) in float64 to 1e-12.

// a, c: [..., r] -> [..., C(r,2)], the same values as pluecker_coords(a, c) but written by one
// loop without index_select gathers; backward: grad_a = S c, grad_c = -S a, with S the
// antisymmetric r x r matrix holding grad_w (no 496-wide temporaries beyond grad_w itself).
at::Tensor pluecker_wedge(const at::Tensor& a, const at::Tensor& c);

// The identity's partner mean, z: [B, L, r] ->
//   c_t = (1/|W_t|) sum_{D in W_t} z_{t+-D} / sqrt(max(|z_t|^2 |z_p|^2 - (z_t.z_p)^2, eps^2))
// (future: partner t + D; past: t - D; W_t the offsets with a partner in range; c_t = 0 when
// W_t is empty). Duplicate offsets count twice, as in the literal mean. One fused loop forward,
// two fused loops backward (anchor side, then partner side: no write races, no per-offset
// temporaries).
at::Tensor pluecker_partner_mean(const at::Tensor& z, const std::vector<int64_t>& offsets,
                                 bool future, double eps);

}  // namespace grassaudit
