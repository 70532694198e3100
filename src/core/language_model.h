#pragma once
// Decoder-only language model shared by every mixer:
//   h0 = E[x] + P[pos]  ->  N x Block(mixer, FFN)  ->  LayerNorm  ->  logits = h E^T (tied, no bias)
// Block: hhat = mixer(h) (the mixer normalises: Grassmann gated blend + LN + dropout, or
// post-norm attention), then h' = LayerNorm(hhat + dropout(W2 GELU(W1 hhat))).
// register_module names are checkpoint keys: keep them stable.
#include <memory>
#include <string>
#include <vector>

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>

#include "core/row_dropout.h"
#include "core/model_config.h"
#include "core/token_mixer.h"

namespace grassaudit {

class BlockImpl : public torch::nn::Module {
 public:
  BlockImpl(const ModelConfig& cfg, int64_t layer);
  // h: [B, L, d] -> [B, L, d]
  torch::Tensor forward(const torch::Tensor& h);
  // The incremental path: h [B, n, d] for the positions after cache.offset -> [B, n, d]; the
  // feed-forward is position-wise, so only the mixer keeps state.
  torch::Tensor step(const torch::Tensor& h, MixerCache& cache);
  const TokenMixerImpl& mixer() const { return *mixer_; }

 private:
  std::shared_ptr<TokenMixerImpl> mixer_;
  torch::nn::Linear ffn_in_{nullptr}, ffn_out_{nullptr};
  torch::nn::LayerNorm ffn_norm_{nullptr};
  RowDropout dropout_{nullptr};
  bool pre_norm_ = false;
};
TORCH_MODULE(Block);

// The state of one incremental run: how many positions were consumed and each layer's cache.
struct LmState {
  int64_t offset = 0;
  std::vector<MixerCache> layers;
};

class LanguageModelImpl : public torch::nn::Module {
 public:
  explicit LanguageModelImpl(const ModelConfig& cfg);

  // ids: [B, L] int64 -> logits [B, L, V]
  torch::Tensor forward(const torch::Tensor& ids);
  // ids -> E[x]: [B, L, d] (the "input embeddings" the gradient audit differentiates against)
  torch::Tensor embed_tokens(const torch::Tensor& ids);
  // E[x]: [B, L, d] -> final hidden state after the last LayerNorm [B, L, d]
  torch::Tensor hidden_from_embeddings(const torch::Tensor& tok);
  // final hidden [B, L, d] -> logits [B, L, V] (position-wise; tied to E)
  torch::Tensor head(const torch::Tensor& hidden);

  // The incremental path (generation): an empty state, then step() with the next n >= 1 ids
  // [B, n] -> the final hidden states [B, n, d] of those positions, equal to
  // hidden_from_embeddings' rows (float64 1e-12, float32 1e-5; tests/core/test_incremental.cpp).
  // InputError when a mixer has none (incremental_unsupported()) or offset + n > max_len.
  bool has_incremental() const;
  std::string incremental_unsupported() const;  // "" when has_incremental()
  LmState init_state() const;
  torch::Tensor step_hidden(const torch::Tensor& ids, LmState& state);
  torch::Tensor step(const torch::Tensor& ids, LmState& state) { return head(step_hidden(ids, state)); }
  // The head's weight, E = tok_emb.weight [V, d] (for the fused head loss, core/fused_head.h).
  const torch::Tensor& tied_weight() const { return tok_emb_->weight; }

  const ModelConfig& config() const { return cfg_; }
  int64_t parameter_count() const;

 private:
  ModelConfig cfg_;
  torch::nn::Embedding tok_emb_{nullptr}, pos_emb_{nullptr};
  RowDropout emb_dropout_{nullptr};
  torch::nn::ModuleList blocks_{nullptr};
  torch::nn::LayerNorm final_norm_{nullptr};
};
TORCH_MODULE(LanguageModel);

}  // namespace grassaudit
