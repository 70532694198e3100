#include "core/attention_mixer.h"

#include <ATen/ATen.h>

#include <cmath>

#include "core/attention_masks.h"
#include "core/model_config.h"

namespace grassaudit {

AttentionMixerImpl::AttentionMixerImpl(int64_t d_model, int64_t heads, double dropout)
    : d_model_(d_model), heads_(heads) {
  in_proj_ = register_module("in_proj", torch::nn::Linear(d_model, 3 * d_model));
  out_proj_ = register_module("out_proj", torch::nn::Linear(d_model, d_model));
  norm_ = register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d_model})));
  attn_dropout_ = register_module("attn_dropout", torch::nn::Dropout(dropout));
  dropout_ = register_module("dropout", torch::nn::Dropout(dropout));
}

// h: [B, L, d] -> [B, L, d]. scores [B, H, L, L] masked above the diagonal with -inf, so the
// softmax puts exactly zero weight on the future (the audit's gradient check relies on it).
torch::Tensor AttentionMixerImpl::forward(const torch::Tensor& h) {
  const int64_t B = h.size(0), L = h.size(1), H = heads_, dh = d_model_ / heads_;
  auto qkv = in_proj_->forward(h).view({B, L, 3, H, dh}).permute({2, 0, 3, 1, 4});  // [3,B,H,L,dh]
  auto q = qkv[0], k = qkv[1], v = qkv[2];
  auto scores = at::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(dh)));
  auto blocked = causal_mask(L, h.device()).logical_not();                        // [L, L]
  scores = scores.masked_fill(blocked, -std::numeric_limits<double>::infinity());
  auto probs = attn_dropout_->forward(at::softmax(scores, -1));
  auto ctx = at::matmul(probs, v).permute({0, 2, 1, 3}).reshape({B, L, d_model_});  // [B, L, d]
  return norm_->forward(h + dropout_->forward(out_proj_->forward(ctx)));
}

void register_attention_mixer(MixerRegistry& registry) {
  registry.add("attention", "causally masked multi-head self-attention (baseline)",
               [](const ModelConfig& cfg, int64_t) -> std::shared_ptr<TokenMixerImpl> {
                 return std::make_shared<AttentionMixerImpl>(cfg.d_model, cfg.heads, cfg.dropout);
               });
}

}  // namespace grassaudit
