#pragma once
// Dropout whose masks do not depend on how a global batch is split over data-parallel ranks.
//
// Why: with a plain per-rank generator, rank r of W would draw masks for its own rows only, so
// the masks (and the training curve) would change with the world size. Here every rank draws the
// mask of the WHOLE global batch from the same generator state, exactly as one process would
// (the same at::empty(...).bernoulli_(1 - p) that at::dropout runs on CPU), and keeps its own
// rows. All ranks then consume the same random numbers, their generators stay equal, and one
// process and W ranks apply identical masks row by row. The cost is drawing W times the random
// numbers a rank needs (cheap next to the forward pass). Outside a DropoutRowsScope (one
// process, evaluation, the audit) it is at::dropout itself.
#include <cstdint>

#include <ATen/core/Tensor.h>
#include <torch/nn/cloneable.h>
#include <torch/nn/pimpl.h>

namespace grassaudit {

// While alive, dropout inputs are rows [first, first + rows) of a global batch of global_rows:
// every tensor reaching dropout has a leading dimension of rows * k (batch-major, e.g. [B, L, d]
// or [B*H, L, L]) and its mask is drawn for global_rows * k.
class DropoutRowsScope {
 public:
  DropoutRowsScope(int64_t global_rows, int64_t first, int64_t rows);
  ~DropoutRowsScope();
  DropoutRowsScope(const DropoutRowsScope&) = delete;
  DropoutRowsScope& operator=(const DropoutRowsScope&) = delete;

 private:
  int64_t saved_[3];
};

// x: [rows * k, ...] -> same shape. at::dropout(x, p, train) outside a scope.
at::Tensor row_sharded_dropout(const at::Tensor& x, double p, bool train);

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
