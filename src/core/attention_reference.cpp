#include "core/attention_reference.h"

#include <ATen/ATen.h>

#include <cmath>
#include <limits>
#include <vector>

#include "core/attention_masks.h"
#include "core/attention_mixer.h"

namespace grassaudit {

// h: [B, L, d] -> [B, L, d].
//   [q | k | v] = h W_in^T + b_in                      q, k, v: [B, L, d]
//   per head i (columns i*dh .. (i+1)*dh):
//     scores_i = q_i k_i^T / sqrt(dh)                   [B, L, L]
//     scores_i[t, j] = -inf where j > t                 (the full causal mask)
//     ctx_i = dropout(softmax(scores_i)) v_i            [B, L, dh]
//   ctx = [ctx_0 | ... | ctx_{H-1}]                     [B, L, d]
//   hhat = LayerNorm(h + dropout(ctx W_out^T + b_out))      (pre-norm: h + dropout(attend(LayerNorm(h))))
torch::Tensor AttentionReferenceImpl::forward(const torch::Tensor& h) {
  return sublayer(h, [&](const torch::Tensor& x) { return attend(x); });
}

// h: [B, L, d] -> ctx W_out^T + b_out [B, L, d].
torch::Tensor AttentionReferenceImpl::attend(const torch::Tensor& h) {
  const int64_t L = h.size(1), dh = d_model_ / heads_;
  auto qkv = in_proj_->forward(h);                                        // [B, L, 3d]
  auto q = qkv.narrow(-1, 0, d_model_);
  auto k = qkv.narrow(-1, d_model_, d_model_);
  auto v = qkv.narrow(-1, 2 * d_model_, d_model_);
  auto future = causal_mask(L, h.device()).logical_not();                 // [L, L], true above the diagonal
  const double scale = 1.0 / std::sqrt(static_cast<double>(dh));
  std::vector<at::Tensor> heads;
  for (int64_t i = 0; i < heads_; ++i) {
    auto qi = q.narrow(-1, i * dh, dh), ki = k.narrow(-1, i * dh, dh), vi = v.narrow(-1, i * dh, dh);
    auto scores = at::matmul(qi, ki.transpose(1, 2)) * scale;             // [B, L, L]
    scores = scores.masked_fill(future, -std::numeric_limits<double>::infinity());
    auto probs = attn_dropout_->forward(at::softmax(scores, -1));
    heads.push_back(at::matmul(probs, vi));                                 // [B, L, dh]
  }
  auto ctx = at::cat(heads, -1);                                           // [B, L, d]
  return out_proj_->forward(ctx);
}

}  // namespace grassaudit
