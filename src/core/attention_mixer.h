#pragma once
// Causally masked multi-head self-attention, as the mixing sublayer of a standard post-norm
// Transformer block: hhat = LayerNorm(h + dropout(MHA(h))). Parameter layout matches
// nn.MultiheadAttention (in_proj 3d x d + bias, out_proj d x d + bias) so counts compare.
// This is the fast path (packed GEMMs, fused mask, query blocks for long sequences); the
// readable reference of the same function is attention_reference.h ("literal-attention").
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include "core/row_dropout.h"
#include "core/token_mixer.h"

namespace grassaudit {

// InputError unless heads >= 1 and heads divides d_model (shared by both attention paths).
void check_attention_heads(int64_t d_model, int64_t heads);

// The parameters both attention paths share: post-norm multi-head self-attention with a packed
// in-projection [3d, d], out-projection [d, d], LayerNorm and two dropouts. The register_module
// names are checkpoint keys (pinned by tests/core/test_checkpoint_keys.cpp), the same for both
// paths so weights copy across by name.
class AttentionParamsImpl : public TokenMixerImpl {
 protected:
  AttentionParamsImpl(int64_t d_model, int64_t heads, double dropout);
  int64_t d_model_, heads_;
  torch::nn::Linear in_proj_{nullptr}, out_proj_{nullptr};
  torch::nn::LayerNorm norm_{nullptr};
  RowDropout attn_dropout_{nullptr}, dropout_{nullptr};
};

// The fast path (blocked causal attention for long sequences).
class AttentionMixerImpl : public AttentionParamsImpl {
 public:
  AttentionMixerImpl(int64_t d_model, int64_t heads, double dropout)
      : AttentionParamsImpl(d_model, heads, dropout) {}
  torch::Tensor forward(const torch::Tensor& h) override;
};

}  // namespace grassaudit
