#pragma once
// The tied output head and its cross-entropy without the [N, V] logits tensor (fused linear
// cross-entropy, as Liger-Kernel's; Wijmans et al. 2024, "Cut Your Losses").
//
// At paper size (N = B*L = 4096 tokens, V = 30,522) the logits, their softmax and their
// gradient are 500 MB each: the step was bound by memory traffic, not by the GEMMs. Here the
// tokens go through in chunks whose logits stay in cache:
//   z = h_c W^T                          [n, V]   (one preallocated buffer, reused)
//   loss_i = log sum_v exp(z_iv - m_i) - (z_i,t_i - m_i),   m_i = max_v z_iv
//   g = (softmax(z) - onehot(t)) / count  formed in place in the same buffer
//   grad_h_c = g W,  grad_W += g^T h_c    (only when a gradient is wanted)
// so the gradients are ready when the forward returns; backward only scales them by the
// incoming gradient. The chunk loop is sequential (parallelism inside the GEMMs only), so the
// same thread count gives the same bits. Device-agnostic ATen ops; float32 and float64.
//
// Targets equal to ignore_index (-100, as at::cross_entropy_loss) are not scored: they add
// nothing to the loss, the count or the gradients. All targets ignored: loss NaN (0/0, as
// at::cross_entropy_loss), gradients zero. No double backward.
#include <cstdint>

#include <ATen/core/Tensor.h>

namespace grassaudit {

// Tokens per chunk; the [chunk, V] float32 buffer is chunk * 122 KB at V = 30,522. Chunks of
// 256 to 2048 tokens run the paper-size step at the same speed (reports/bench/README.md has the
// sweep); one chunk of 4096 is slightly faster from larger GEMMs but needs a 500 MB buffer. 512
// keeps the buffer at 62 MB (the step's peak memory target) and reads W half as often as 256
// does, which matters on machines with less memory bandwidth.
constexpr int64_t kDefaultHeadChunk = 512;
constexpr int64_t kIgnoreIndex = -100;

// hidden: [N, d], weight: [V, d] (logits = hidden weight^T, no bias), targets: [N] int64 ->
// mean over scored targets of -log softmax(logits)[target], a 0-dim tensor of hidden's dtype,
// differentiable in hidden and weight.
at::Tensor fused_head_loss(const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& targets,
                           int64_t chunk = kDefaultHeadChunk, int64_t ignore_index = kIgnoreIndex);

// Summed negative log-likelihood (accumulated in float64) and the number of scored targets,
// for perplexities over many batches. No gradient (none is built).
struct HeadLossSum {
  double sum = 0;
  int64_t count = 0;
};
HeadLossSum fused_head_loss_sum(const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& targets,
                                int64_t chunk = kDefaultHeadChunk, int64_t ignore_index = kIgnoreIndex);

// The readable reference the fused path is tested against: the whole [N, V] logits, then
// at::cross_entropy_loss (mean over scored targets).
at::Tensor reference_head_loss(const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& targets,
                               int64_t ignore_index = kIgnoreIndex);

}  // namespace grassaudit
