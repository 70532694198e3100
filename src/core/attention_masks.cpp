#include "core/attention_masks.h"

#include <ATen/ATen.h>

namespace grassaudit {
namespace {
// Query and key position grids: i [L, 1], j [1, L].
std::pair<at::Tensor, at::Tensor> grid(int64_t L, c10::Device device) {
  auto pos = at::arange(L, at::TensorOptions().dtype(at::kLong).device(device));
  return {pos.view({L, 1}), pos.view({1, L})};
}
}  // namespace

at::Tensor causal_mask(int64_t L, c10::Device device) {
  auto [i, j] = grid(L, device);
  return j.le(i);
}

at::Tensor sliding_window_causal_mask(int64_t L, int64_t window, c10::Device device) {
  auto [i, j] = grid(L, device);
  return j.le(i).logical_and(j.gt(i - window));
}

at::Tensor block_causal_mask(int64_t L, int64_t chunk, c10::Device device) {
  auto [i, j] = grid(L, device);
  return at::div(j, chunk, "floor").le(at::div(i, chunk, "floor"));
}

at::Tensor prefix_lm_mask(int64_t L, int64_t prefix, c10::Device device) {
  auto [i, j] = grid(L, device);
  return j.le(i).logical_or(j.lt(prefix));
}

}  // namespace grassaudit
