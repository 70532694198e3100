#include "core/row_dropout.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <stdexcept>

namespace grassaudit {
namespace {
// {global_rows, first, rows}; global_rows == 0: no scope.
thread_local int64_t g_rows[3] = {0, 0, 0};
}  // namespace

DropoutRowsScope::DropoutRowsScope(int64_t global_rows, int64_t first, int64_t rows) {
  for (int i = 0; i < 3; ++i) saved_[i] = g_rows[i];
  g_rows[0] = global_rows;
  g_rows[1] = first;
  g_rows[2] = rows;
}

DropoutRowsScope::~DropoutRowsScope() {
  for (int i = 0; i < 3; ++i) g_rows[i] = saved_[i];
}

at::Tensor row_sharded_dropout(const at::Tensor& x, double p, bool train) {
  const int64_t global = g_rows[0], first = g_rows[1], rows = g_rows[2];
  if (global == 0 || (first == 0 && rows == global)) return at::dropout(x, p, train);
  // What at::dropout does on CPU (ATen's _dropout_impl), with the mask drawn for the global batch.
  if (p == 0 || !train || x.numel() == 0) return x;
  if (rows <= 0 || x.size(0) % rows != 0)
    throw std::logic_error(fmt::format("row-sharded dropout: leading dimension {} is not a multiple of the {} rows "
                                       "of this rank",
                                       x.size(0), rows));
  const int64_t k = x.size(0) / rows;
  if (p == 1) return x * at::zeros({}, x.options());
  auto sizes = x.sizes().vec();
  sizes[0] = global * k;
  auto noise = at::empty(sizes, x.options().memory_format(at::MemoryFormat::Contiguous));
  noise.bernoulli_(1 - p);
  noise.div_(1 - p);
  return x * noise.narrow(0, first * k, x.size(0));
}

}  // namespace grassaudit
