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
 public:
  // Both paths take this constructor as theirs (the class itself is abstract: no forward).
  // pre_norm: hhat = h + dropout(MHA(LN(h))) instead of the post-norm LN(h + dropout(MHA(h))).
  // InputError unless heads >= 1 divides d_model.
  AttentionParamsImpl(int64_t d_model, int64_t heads, double dropout, bool pre_norm = false);

 protected:
  // The sublayer around attn(x) [.., d]: post LN(h + dropout(attn(h))), pre h + dropout(attn(LN(h))).
  template <class Attn>
  torch::Tensor sublayer(const torch::Tensor& h, Attn&& attn) {
    if (pre_norm_) return h + dropout_->forward(attn(norm_->forward(h)));
    return norm_->forward(h + dropout_->forward(attn(h)));
  }
  int64_t d_model_, heads_;
  bool pre_norm_;

 public:
  // The incremental path, shared by both attention paths: a KV cache per layer (cache.tensors =
  // {k, v}, each [B*H, T, dh], T = cache.offset), grown by the n new positions; memory and cost
  // per new token grow with T, as attention's do.
  bool has_incremental() const override { return true; }
  torch::Tensor step(const torch::Tensor& h, MixerCache& cache) override;

 protected:
  torch::nn::Linear in_proj_{nullptr}, out_proj_{nullptr};
  torch::nn::LayerNorm norm_{nullptr};
  RowDropout attn_dropout_{nullptr}, dropout_{nullptr};
};

// The fast path (blocked causal attention for long sequences).
class AttentionMixerImpl : public AttentionParamsImpl {
 public:
  using AttentionParamsImpl::AttentionParamsImpl;
  torch::Tensor forward(const torch::Tensor& h) override;

 private:
  torch::Tensor attend(const torch::Tensor& h2, int64_t B, int64_t L);
};

}  // namespace grassaudit
