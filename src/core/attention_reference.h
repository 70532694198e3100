#pragma once
// The readable reference of AttentionMixerImpl ("literal-attention"): the same post-norm,
// causally masked multi-head self-attention, hhat = LayerNorm(h + dropout(MHA(h))), written
// the textbook way: one loop over heads, an explicit full [L, L] causal mask and softmax, no
// packed layouts and no query blocks. Same parameter names (checkpoint keys) as the fast path,
// so weights copy across by name; tests/core/test_mixer_parity.cpp holds the two equal.
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include "core/attention_mixer.h"

namespace grassaudit {

class AttentionReferenceImpl : public AttentionParamsImpl {
 public:
  using AttentionParamsImpl::AttentionParamsImpl;
  torch::Tensor forward(const torch::Tensor& h) override;

 private:
  torch::Tensor attend(const torch::Tensor& h);
};

}  // namespace grassaudit
