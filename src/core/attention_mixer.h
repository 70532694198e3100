#pragma once
// Causally masked multi-head self-attention, as the mixing sublayer of a standard post-norm
// Transformer block: hhat = LayerNorm(h + dropout(MHA(h))). Parameter layout matches
// nn.MultiheadAttention (in_proj 3d x d + bias, out_proj d x d + bias) so counts compare.
#include <string>

#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include "core/token_mixer.h"

namespace grassaudit {

class AttentionMixerImpl : public TokenMixerImpl {
 public:
  AttentionMixerImpl(int64_t d_model, int64_t heads, double dropout);
  torch::Tensor forward(const torch::Tensor& h) override;
  std::string name() const override { return "attention"; }
  std::string reads() const override { return "positions 1..t (causal mask)"; }

 private:
  int64_t d_model_, heads_;
  torch::nn::Linear in_proj_{nullptr}, out_proj_{nullptr};
  torch::nn::LayerNorm norm_{nullptr};
  torch::nn::Dropout attn_dropout_{nullptr}, dropout_{nullptr};
};

}  // namespace grassaudit
