#pragma once
// Boolean attention masks, [L, L] (or [Lq, Lk]), true where query i may read key j.
// Property tests check each allows exactly what its definition says.
#include <cstdint>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

namespace grassaudit {

// j <= i
at::Tensor causal_mask(int64_t L, c10::Device device = c10::kCPU);
// i - window < j <= i  (each query reads itself and the window-1 keys before it)
at::Tensor sliding_window_causal_mask(int64_t L, int64_t window, c10::Device device = c10::kCPU);
// Block (chunk) causal: positions grouped into chunks of `chunk`; query i reads key j when
// j's chunk <= i's chunk. Causal across chunks, bidirectional inside one (so NOT token-causal).
at::Tensor block_causal_mask(int64_t L, int64_t chunk, c10::Device device = c10::kCPU);
// prefix-LM: every query reads the whole prefix [0, prefix), and j <= i beyond it.
at::Tensor prefix_lm_mask(int64_t L, int64_t prefix, c10::Device device = c10::kCPU);

}  // namespace grassaudit
