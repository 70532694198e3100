#pragma once
// Causally masked multi-head self-attention, as the mixing sublayer of a standard post-norm
// Transformer block: hhat = LayerNorm(h + dropout(MHA(h))). Parameter layout matches
// nn.MultiheadAttention (in_proj 3d x d + bias, out_proj d x d + bias) so counts compare.
// This is the fast path (packed GEMMs, fused mask, query blocks for long sequences); the
// readable reference of the same function is attention_reference.h ("literal-attention").
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include "core/token_mixer.h"

namespace grassaudit {

// InputError unless heads >= 1 and heads divides d_model (shared by both attention paths).
void check_attention_heads(int64_t d_model, int64_t heads);

class AttentionMixerImpl : public TokenMixerImpl {
 public:
  AttentionMixerImpl(int64_t d_model, int64_t heads, double dropout);
  torch::Tensor forward(const torch::Tensor& h) override;

 private:
  int64_t d_model_, heads_;
  torch::nn::Linear in_proj_{nullptr}, out_proj_{nullptr};
  torch::nn::LayerNorm norm_{nullptr};
  torch::nn::Dropout attn_dropout_{nullptr}, dropout_{nullptr};
};

}  // namespace grassaudit
