#pragma once
// SNLI classifiers: one shared encoder, then either the Grassmann-Pluecker head or a Transformer
// head (SPEC.md section 3: "frozen DistilBERT features, then either a 2-layer Transformer head or
// a Grassmann-Pluecker head (d_proj 64, window 8 stride 8 over the token sequence, d_model 256,
// 2 mixing layers, 4 mixing heads, d_ff 512, dropout 0.1)").
//
// The shared encoder. No pretrained encoder is available offline, so DistilBERT's frozen
// features are replaced by a small encoder trained from scratch, identical for both heads:
//   x_t = LayerNorm(E[id_t] + P[t] + S[segment_t]), dropout, then `encoder_layers` post-norm
//   self-attention blocks (the same block as the Transformer head's; default 1), d_model 256.
// E has one row per WordPiece id seen in training (nli_data.h: build_vocab_map); the id -> row
// map is a buffer of the model, so the model reads raw WordPiece ids.
//
// The Grassmann-Pluecker head, as this project reads the paper (the paper gives only the
// hyper-parameters above). Each of the 2 mixing layers, on h [B, T, d] with padding mask:
//   1. reduction: z_t = W_red h_t + b_red, d -> d_proj = 64, split into 4 mixing heads of rank
//      r = 16 (z_t^k in R^16, k = 1..4).
//   2. windows: the (padded) sequence is cut into windows of 8 tokens with stride 8
//      (non-overlapping; [CLS] premise [SEP] hypothesis [SEP] in order, so a window may straddle
//      the premise/hypothesis boundary). m_w^k = mean of z_s^k over the real tokens s of window w.
//   3. pairing: each token with its window mean, per head: p_t^k = z_t^k ^ m_w^k (Pluecker
//      coordinates, C(16, 2) = 120 per head). By bilinearity and z ^ z = 0,
//      z_t ^ m_w = (1/n_w) sum over the other real tokens s of the window of z_t ^ z_s: the token
//      paired with every other token of its window. Never a vector with itself: the feature is
//      zero only for a token alone in its window (then g_t = b_plu, said here).
//      (A public reproduction took Pluecker coordinates of a pooled vector with itself, which
//      are identically zero; tests/nli checks these features are non-zero on real pairs.)
//   4. normalisation: p_hat = p / max(||p||_2, eps) per head (eps 1e-8), heads concatenated
//      (480), projected back: g_t = W_plu p_hat_t + b_plu (480 -> d). The LM layer normalises
//      each pair before averaging; here the window aggregate is normalised once, which bounds
//      ||p_hat|| <= 1 per head in float32 even for nearly parallel pairs.
//   5. gated fusion as in the LM layer: alpha = sigmoid(W_gate [h; g] + b), mixed = alpha*h +
//      (1-alpha)*g, LayerNorm, dropout; 6. FFN (d_ff 512, GELU), post-norm residual.
// Then both heads: masked mean over the real tokens, dropout, Linear(d, 3).
//
// The Transformer head: 2 post-norm self-attention blocks (4 heads, d_ff 512, dropout 0.1, GELU,
// padding keys masked), the same pooling and Linear(d, 3).
#include <cstdint>
#include <string>
#include <vector>

#include <torch/nn/module.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>

#include "core/row_dropout.h"
#include "nli/nli_config.h"

namespace grassaudit {

// Post-norm self-attention block with a key-padding mask.
class NliAttentionBlockImpl : public torch::nn::Module {
 public:
  NliAttentionBlockImpl(int64_t d_model, int64_t heads, int64_t d_ff, double dropout);
  // x [B, T, d], mask [B, T] bool (true = real token) -> [B, T, d]
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask);

 private:
  int64_t d_, heads_;
  torch::nn::Linear qkv_{nullptr}, out_{nullptr}, ff1_{nullptr}, ff2_{nullptr};
  torch::nn::LayerNorm norm1_{nullptr}, norm2_{nullptr};
  RowDropout attn_drop_{nullptr}, drop_{nullptr};
};
TORCH_MODULE(NliAttentionBlock);

// One Grassmann-Pluecker mixing layer over windows (see the top of this file).
class GrassmannWindowLayerImpl : public torch::nn::Module {
 public:
  explicit GrassmannWindowLayerImpl(const NliConfig& c);
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask);
  // p_hat [B, T, heads * C(r, 2)] for input x (T a multiple of the window): the normalised
  // Pluecker features before W_plu. Exposed for tests.
  torch::Tensor pluecker_features(const torch::Tensor& x, const torch::Tensor& mask);
  // Ablation: when set, p_hat is replaced by zeros (g_t = b_plu everywhere).
  void set_ablate_pluecker(bool on) { ablate_ = on; }

 private:
  int64_t d_, heads_, r_, window_;
  double eps_;
  bool ablate_ = false;
  torch::nn::Linear reduce_{nullptr}, plucker_{nullptr}, gate_{nullptr}, ff1_{nullptr}, ff2_{nullptr};
  torch::nn::LayerNorm norm1_{nullptr}, norm2_{nullptr};
  RowDropout drop_{nullptr};
};
TORCH_MODULE(GrassmannWindowLayer);

class NliModelImpl : public torch::nn::Module {
 public:
  // vocab_map: [full_vocab] int64 WordPiece id -> embedding row (build_vocab_map); an undefined
  // tensor gives the identity map clipped to the [UNK] row 1 (tests only).
  NliModelImpl(const NliConfig& config, const torch::Tensor& vocab_map);

  // ids, segments [B, T] int64; mask [B, T] bool -> logits [B, classes]. T is padded internally
  // to a multiple of the window if needed.
  torch::Tensor forward(const torch::Tensor& ids, const torch::Tensor& segments, const torch::Tensor& mask);
  // The shared encoder's output [B, T, d] (the "features" both heads read).
  torch::Tensor encode(const torch::Tensor& ids, const torch::Tensor& segments, const torch::Tensor& mask);
  // The head on encoder features.
  torch::Tensor head_forward(const torch::Tensor& features, const torch::Tensor& mask);

  const NliConfig& config() const { return config_; }
  int64_t parameter_count() const;
  int64_t head_parameter_count() const;     // the head's layers, pooling and classifier
  // Grassmann head only (empty for the Transformer head).
  std::vector<GrassmannWindowLayer>& grassmann_layers() { return glayers_; }
  void set_ablate_pluecker(bool on);

 private:
  NliConfig config_;
  torch::Tensor vocab_map_;
  torch::nn::Embedding tok_{nullptr}, pos_{nullptr}, seg_{nullptr};
  torch::nn::LayerNorm emb_norm_{nullptr};
  RowDropout emb_drop_{nullptr}, pool_drop_{nullptr};
  std::vector<NliAttentionBlock> enc_layers_;
  std::vector<NliAttentionBlock> tlayers_;
  std::vector<GrassmannWindowLayer> glayers_;
  torch::nn::Linear classifier_{nullptr};
};
TORCH_MODULE(NliModel);

// Pads x [B, T, ...] and mask [B, T] along T to a multiple of `multiple` (no-op if already).
std::pair<torch::Tensor, torch::Tensor> pad_to_multiple(const torch::Tensor& x, const torch::Tensor& mask,
                                                        int64_t multiple);

}  // namespace grassaudit
