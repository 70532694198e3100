#include "core/grassmann_mixer.h"

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <tuple>

#include "core/model_config.h"
#include "core/pluecker.h"

namespace grassaudit {
namespace {

// Number of offsets with a partner at each position t: [L] in h's dtype/device.
// future: t + D <= L-1 ; past: t - D >= 0 (0-based).
at::Tensor valid_offset_count(int64_t L, const std::vector<int64_t>& offsets, PairDirection dir,
                              const at::TensorOptions& opts) {
  auto count = at::zeros({L}, opts);
  for (int64_t D : offsets) {
    if (D >= L) continue;
    if (dir == PairDirection::kFuture) count.narrow(0, 0, L - D).add_(1);
    else count.narrow(0, D, L - D).add_(1);
  }
  return count;
}

// For one offset D < L: the positions that have a partner and the partner rows.
// z: [B, L, r] -> (anchor [B, L-D, r], partner [B, L-D, r], first valid position).
struct PairSlices {
  at::Tensor anchor, partner;
  int64_t start;
};
PairSlices pair_slices(const at::Tensor& z, int64_t D, PairDirection dir) {
  const int64_t L = z.size(1);
  if (dir == PairDirection::kFuture) return {z.narrow(1, 0, L - D), z.narrow(1, D, L - D), 0};
  return {z.narrow(1, D, L - D), z.narrow(1, 0, L - D), D};
}

// Places x [B, L-D, k] (rows for positions start..start+L-D-1) into a zero [B, L, k].
at::Tensor scatter_rows(const at::Tensor& x, int64_t L, int64_t start) {
  const int64_t n = x.size(1);
  return at::constant_pad_nd(x, {0, 0, start, L - n - start}, 0.0);
}

}  // namespace

GrassmannMixerImpl::GrassmannMixerImpl(const GrassmannOptions& options) : options_(options) {
  const int64_t d = options_.d_model, r = options_.rank;
  reduce_ = register_module("reduce", torch::nn::Linear(d, r));
  plucker_ = register_module("plucker", torch::nn::Linear(pluecker_dim(r), d));
  gate_ = register_module("gate", torch::nn::Linear(2 * d, d));
  norm_ = register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d})));
  dropout_ = register_module("dropout", torch::nn::Dropout(options_.dropout));
  // Plain members, not buffers: Module::to(dtype) would turn registered int64 buffers into
  // floats, and they are a function of r, not state worth checkpointing.
  std::tie(pair_i_, pair_j_) = pluecker_pair_indices(r);
}

std::string GrassmannMixerImpl::name() const {
  std::string dir = options_.direction == PairDirection::kFuture ? "future" : "past";
  return options_.literal ? "literal-" + dir : dir;
}

std::string GrassmannMixerImpl::reads() const {
  const char* sign = options_.direction == PairDirection::kFuture ? "+" : "-";
  std::vector<std::string> parts;
  for (int64_t D : options_.offsets) parts.push_back(fmt::format("t{}{}", sign, D));
  return fmt::format("t and {} ({} pairing)", fmt::join(parts, ", "),
                     options_.direction == PairDirection::kFuture ? "future" : "past");
}

// z: [B, L, r] -> g: [B, L, d]. Literal: per offset D, p = z_t ^ z_partner ([B, L-D, C]),
// p_hat = p / max(||p||, eps), g^D = W_plu p_hat + b_plu; g_t = mean over valid D, 0 if none.
torch::Tensor GrassmannMixerImpl::geometry_literal(const torch::Tensor& z) {
  const int64_t B = z.size(0), L = z.size(1), d = options_.d_model;
  auto sum = at::zeros({B, L, d}, z.options());
  for (int64_t D : options_.offsets) {
    if (D >= L) continue;
    auto s = pair_slices(z, D, options_.direction);
    auto p = pluecker_coords(s.anchor, s.partner);                        // [B, L-D, C]
    auto norm = (p * p).sum(-1, true).clamp_min(options_.eps * options_.eps).sqrt();
    auto gD = plucker_->forward(p / norm);                                // [B, L-D, d]
    sum = sum + scatter_rows(gD, L, s.start);
  }
  auto count = valid_offset_count(L, options_.offsets, options_.direction, z.options());
  return sum / count.clamp_min(1).view({1, L, 1});
}

// z: [B, L, r] -> g: [B, L, d]. Fast: c_t = (1/|W_t|) sum_D z_partner / max(||z_t ^ z_partner||, eps)
// (norms by Lagrange's identity, only [B, L] scalars per offset), then ONE wedge z_t ^ c_t
// ([B, L, C]) and one projection per token. Positions with no valid offset get g_t = 0.
torch::Tensor GrassmannMixerImpl::geometry_fast(const torch::Tensor& z) {
  const int64_t L = z.size(1);
  auto z2 = (z * z).sum(-1);                                              // [B, L]
  auto c = at::zeros_like(z);                                             // [B, L, r]
  for (int64_t D : options_.offsets) {
    if (D >= L) continue;
    auto s = pair_slices(z, D, options_.direction);
    auto a2 = z2.narrow(1, s.start, L - D);
    auto b2 = z2.narrow(1, s.start == 0 ? D : 0, L - D);
    auto ab = (s.anchor * s.partner).sum(-1);                             // [B, L-D]
    auto norm = wedge_norm_from_gram(a2, b2, ab, options_.eps);
    c = c + scatter_rows(s.partner / norm.unsqueeze(-1), L, s.start);
  }
  auto count = valid_offset_count(L, options_.offsets, options_.direction, z.options());
  c = c / count.clamp_min(1).view({1, L, 1});
  if (pair_i_.device() != z.device()) {
    pair_i_ = pair_i_.to(z.device());
    pair_j_ = pair_j_.to(z.device());
  }
  auto wedge = z.index_select(-1, pair_i_) * c.index_select(-1, pair_j_) -
               z.index_select(-1, pair_j_) * c.index_select(-1, pair_i_);  // [B, L, C]
  auto has_any = (count > 0).to(z.scalar_type()).view({1, L, 1});
  return plucker_->forward(wedge) * has_any;
}

// h, g: [B, L, d] -> dropout(LayerNorm(alpha * h + (1 - alpha) * g)), alpha = sigmoid(W_gate [h; g]).
torch::Tensor GrassmannMixerImpl::gate_blend(const torch::Tensor& h, const torch::Tensor& g) {
  auto alpha = at::sigmoid(gate_->forward(at::cat({h, g}, -1)));
  auto mixed = alpha * h + (1 - alpha) * g;
  return dropout_->forward(norm_->forward(mixed));
}

torch::Tensor GrassmannMixerImpl::forward_fast(const torch::Tensor& h) {
  return gate_blend(h, geometry_fast(reduce_->forward(h)));
}

torch::Tensor GrassmannMixerImpl::forward_literal(const torch::Tensor& h) {
  return gate_blend(h, geometry_literal(reduce_->forward(h)));
}

torch::Tensor GrassmannMixerImpl::forward(const torch::Tensor& h) {
  return options_.literal ? forward_literal(h) : forward_fast(h);
}

void register_grassmann_mixers(MixerRegistry& registry) {
  auto make = [](PairDirection dir, bool literal) {
    return [dir, literal](const ModelConfig& cfg, int64_t layer) -> std::shared_ptr<TokenMixerImpl> {
      GrassmannOptions o;
      o.d_model = cfg.d_model;
      o.rank = cfg.rank;
      o.offsets = cfg.layer_offsets(layer);
      o.direction = dir;
      o.eps = cfg.eps;
      o.dropout = cfg.dropout;
      o.literal = literal;
      return std::make_shared<GrassmannMixerImpl>(o);
    };
  };
  registry.add("future", "Grassmann, pairs (z_t, z_{t+D}): the paper read literally (sees the future)",
               make(PairDirection::kFuture, false));
  registry.add("past", "Grassmann, pairs (z_t, z_{t-D}): the public reproductions' reading (causal)",
               make(PairDirection::kPast, false));
  registry.add("literal-future", "future, literal per-offset reference path (slow; for tests and bench)",
               make(PairDirection::kFuture, true));
  registry.add("literal-past", "past, literal per-offset reference path (slow; for tests and bench)",
               make(PairDirection::kPast, true));
}

}  // namespace grassaudit
