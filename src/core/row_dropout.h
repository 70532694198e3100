#pragma once
// Dropout whose masks depend on neither how a global batch is split over data-parallel ranks nor
// the thread count, computed in one pass and saved as bytes.
//
// Why: a plain per-rank generator would give rank r of W masks for its own rows only, so the
// masks (and the training curve) would change with the world size. And at::dropout on CPU draws
// its Bernoulli noise serially from mt19937 into a float tensor the size of the input, divides it,
// multiplies, and keeps that float tensor for backward: 4-7.5% of a paper-size training step and
// ~4 bytes per dropped activation of peak memory.
//
// Here (CPU, float32/float64/bf16; bf16 multiplied in float32 and rounded once) one call draws
// ONE 64-bit seed from the default CPU generator, and element i of the global batch is kept iff 32
// bits of splitmix64(seed, i / 2) (the low half for even i, the high half for odd i) are at least
// round(p * 2^32): a counter-based mask, so every rank (drawing the same seed, as one process
// would) computes exactly the rows it holds, in parallel, bit-identical to the one-process mask;
// the kept elements are scaled by 1 / (1 - p) as at::dropout does. Backward multiplies by the
// saved uint8 mask. Other devices and dtypes keep ATen's Bernoulli noise (drawn for the whole
// global batch inside a DropoutRowsScope). reference_row_dropout() is the readable version of the
// CPU kernel, kept beside it for the tests.
#include <array>
#include <cstdint>

#include <ATen/core/Tensor.h>
#include <torch/nn/cloneable.h>
#include <torch/nn/pimpl.h>

#include "util/scoped_value.h"

namespace grassaudit {

// While alive, dropout inputs are rows [first, first + rows) of a global batch of global_rows:
// every tensor reaching dropout has a leading dimension of rows * k (batch-major, e.g. [B, L, d]
// or [B*H, L, L]) and its mask is that of the global_rows * k leading rows.
class DropoutRowsScope {
 public:
  DropoutRowsScope(int64_t global_rows, int64_t first, int64_t rows);

 private:
  ScopedValue<std::array<int64_t, 3>> rows_;  // global_rows, first, rows
};

// x: [rows * k, ...] -> same shape. Identity when !train or p == 0; zeros when p == 1; p outside
// [0, 1] throws std::invalid_argument. Draws its seed in call order: call it from one thread (the
// models do; the kernel itself is parallel), or the masks would depend on thread timing.
at::Tensor row_sharded_dropout(const at::Tensor& x, double p, bool train);

// The CPU mask rule written plainly (one element at a time, no threads, no autograd):
// x: [n...] (float32/float64), element i has global index first_index + i -> x * keep / (1 - p).
at::Tensor reference_row_dropout(const at::Tensor& x, double p, uint64_t seed, int64_t first_index);

// The kept (1) / dropped (0) bytes of n elements from global index first_index: the kernel's own
// mask pass. kAuto: AVX-512 (16 elements per step) where the CPU has it; kScalar: one element at a
// time. Both give the same bytes (tests/core/test_row_dropout.cpp).
enum class DropoutMaskKernel { kAuto, kScalar };
at::Tensor dropout_mask(int64_t n, double p, uint64_t seed, int64_t first_index, DropoutMaskKernel kernel);
// The kernel's multiply pass: x * (mask * 1 / (1 - p)) in x's dtype (bf16 through float32, rounded
// once). kAuto: AVX-512 for float32 and bf16 where the CPU has it. Both give the same bits.
at::Tensor apply_dropout_mask(const at::Tensor& x, const at::Tensor& mask, double p, DropoutMaskKernel kernel);

// Names the mask rule above, for provenance (summary.json) and checkpoints: a run resumed under a
// different rule continues with other masks (not bit-reproducible across the switch).
inline constexpr const char* kDropoutMaskRule = "splitmix64-counter-v1";
// What checkpoints written before the rule was recorded used (ATen's Bernoulli noise everywhere).
inline constexpr const char* kDropoutMaskRuleBefore = "aten-bernoulli";

// The threshold an element's 32 hash bits are compared against (keep iff >=).
uint64_t dropout_threshold(double p);

class RowDropoutImpl : public torch::nn::Cloneable<RowDropoutImpl> {
 public:
  explicit RowDropoutImpl(double p = 0.5) : p_(p) {}
  void reset() override {}
  at::Tensor forward(const at::Tensor& x) { return row_sharded_dropout(x, p_, is_training()); }
  double p() const { return p_; }

 private:
  double p_;
};
TORCH_MODULE(RowDropout);

}  // namespace grassaudit
