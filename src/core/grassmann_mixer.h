#pragma once
// The Causal Grassmann mixing layer (SPEC.md section 1), parameterised by pairing direction:
//   future: the paper read literally, pairs (z_t, z_{t+D}) for t + D <= L  (leaks the future)
//   past:   the reproductions' reading, pairs (z_t, z_{t-D}) for t - D >= 1 (causal)
// Two paths with identical parameters:
//   forward()         fast path: one Pluecker projection per token, via the identity
//                     mean_D W p_hat(z_t, z_D) = W (z_t ^ c_t), c_t = mean_D z_D / ||z_t ^ z_D||
//                     with hand-written backward passes (pluecker.h: partner mean, wedge; a
//                     fused gate blend), no gathers and no per-offset temporaries: its cost is
//                     the three GEMMs (W_red, W_plu, W_gate) plus a few passes, linear in L.
//   forward_literal() the reference: one 496-wide Pluecker tensor and projection per offset.
// Tests hold fast == literal, outputs and gradients (tests/core/test_fast_vs_literal.cpp,
// test_mixer_parity.cpp): float64 1e-12 (gradients 1e-10 at r <= 3, where near-parallel pairs
// amplify rounding), float32 1e-5 (gradients 2e-5) from r = 4 up.
#include <vector>

#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include "core/row_dropout.h"
#include "core/token_mixer.h"

namespace grassaudit {

enum class PairDirection { kFuture, kPast };

struct GrassmannOptions {
  int64_t d_model = 256;
  int64_t rank = 32;
  std::vector<int64_t> offsets{1};
  PairDirection direction = PairDirection::kPast;
  double eps = 1e-8;
  double dropout = 0.1;
  bool literal = false;  // forward() runs the literal reference path
  // post (the paper's): hhat = dropout(LN(blend(h, g(h)))); pre: hhat = h + dropout(blend(u, g(u))), u = LN(h).
  bool pre_norm = false;
};

class GrassmannMixerImpl : public TokenMixerImpl {
 public:
  explicit GrassmannMixerImpl(const GrassmannOptions& options);

  torch::Tensor forward(const torch::Tensor& h) override;
  torch::Tensor forward_fast(const torch::Tensor& h);
  torch::Tensor forward_literal(const torch::Tensor& h);
  const GrassmannOptions& options() const { return options_; }

  // The incremental path (past pairing only): cache.tensors = {z}, the reduced states of the last
  // min(offset, max D) positions [B, <= maxD, r]. A new position needs only those partners, so
  // memory per layer is maxD x r per row and the cost per token is flat in the context: the
  // partner mean over maxD + n rows and one C(r,2) x d projection per new position.
  bool has_incremental() const override { return options_.direction == PairDirection::kPast; }
  std::string incremental_unsupported() const override;
  torch::Tensor step(const torch::Tensor& h, MixerCache& cache) override;

 private:
  // z: [B, L, r] -> g: [B, L, d], the geometric feature g_t before the gate.
  torch::Tensor geometry_fast(const torch::Tensor& z);
  torch::Tensor geometry_literal(const torch::Tensor& z);
  // Reference gate (cat + Linear + sigmoid + blend), used by the literal path.
  torch::Tensor gate_blend(const torch::Tensor& h, const torch::Tensor& g);
  // Same function, fast: split-weight GEMMs and one fused blend node (custom backward).
  torch::Tensor gate_blend_fast(const torch::Tensor& h, const torch::Tensor& g, const torch::Tensor& h_gemm = {});
  // LayerNorm, dropout and (pre-norm) the residual around blend(x), per options_.pre_norm.
  template <class Blend>
  torch::Tensor sublayer(const torch::Tensor& h, Blend&& blend);

  GrassmannOptions options_;
  torch::nn::Linear reduce_{nullptr};    // W_red: d -> r
  torch::nn::Linear pluecker_{nullptr};  // W_plu: C(r,2) -> d, shared by all offsets
  torch::nn::Linear gate_{nullptr};      // W_gate: 2d -> d
  torch::nn::LayerNorm norm_{nullptr};
  RowDropout dropout_{nullptr};
};

}  // namespace grassaudit
