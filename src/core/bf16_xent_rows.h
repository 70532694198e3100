#pragma once
// Softmax cross-entropy over rows of bf16 logits, in float32, with its gradient written back over
// the logits as bf16: the whole elementwise work of the bf16 fused head (core/fused_head.cpp) in
// three sweeps of one row each, while the row (V bf16 values) and its float32 exponentials stay
// in the core's cache. Per row z (V values), target t and gradient scale c:
//   m = max_v z_v,  e_v = exp(z_v - m),  s = sum_v e_v            (float32)
//   loss = log s - (z_t - m)
//   z_v <- bf16(c e_v / s),  z_t <- bf16(c e_t / s - c)           (only when c is given)
// which is c * (softmax(z) - onehot(t)) rounded once. Rows are independent and each is summed by
// one thread in a fixed order, so the bits do not depend on the thread count. On CPUs with
// AVX-512 (every CPU with native bf16 has it) the sweeps are vectorised with a Cephes-style
// exponential (about 1 ulp); elsewhere a scalar loop with std::exp gives the same function.
#include <ATen/core/Tensor.h>

namespace grassaudit {

// logits: [n, V] bf16, contiguous (overwritten with the gradient when coef is defined);
// targets: [n] int64 in [0, V); coef: [n] float32 or undefined (loss only) -> [n] float32 losses.
// kScalar forces the portable loop (the tests compare it with the vectorised one).
enum class Bf16XentKernel { kAuto, kScalar };
at::Tensor bf16_xent_rows(const at::Tensor& logits, const at::Tensor& targets, const at::Tensor& coef,
                          Bf16XentKernel kernel = Bf16XentKernel::kAuto);

// The same function from ATen ops in float32 (the readable reference the tests compare with):
// returns the losses and, when coef is defined, the float32 gradient before its bf16 rounding.
struct Bf16XentReference {
  at::Tensor loss;  // [n] float32
  at::Tensor grad;  // [n, V] float32, undefined without coef
};
Bf16XentReference bf16_xent_rows_reference(const at::Tensor& logits, const at::Tensor& targets,
                                           const at::Tensor& coef);

}  // namespace grassaudit
