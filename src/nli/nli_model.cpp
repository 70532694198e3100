#include "nli/nli_model.h"

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <torch/nn/functional/activation.h>
#include <torch/nn/init.h>

#include <cmath>
#include <limits>

#include "core/pluecker.h"
#include "util/error.h"

namespace grassaudit {

std::pair<torch::Tensor, torch::Tensor> pad_to_multiple(const torch::Tensor& x, const torch::Tensor& mask,
                                                        int64_t multiple) {
  const int64_t T = x.size(1);
  const int64_t extra = (multiple - T % multiple) % multiple;
  if (extra == 0) return {x, mask};
  // constant_pad_nd pads from the last dimension backwards: [last_lo, last_hi, ..., dim1_lo, dim1_hi]
  std::vector<int64_t> p(2 * static_cast<size_t>(x.dim()), 0);
  p[2 * static_cast<size_t>(x.dim() - 2) + 1] = extra;  // dim 1 (counted from the end: x.dim()-2)
  auto xp = at::constant_pad_nd(x, p, 0.0);
  auto mp = at::constant_pad_nd(mask.to(at::kByte), {0, extra}, 0).to(at::kBool);
  return {xp, mp};
}

// ---------------------------------------------------------------------------------------------

NliAttentionBlockImpl::NliAttentionBlockImpl(int64_t d_model, int64_t heads, int64_t d_ff, double dropout)
    : d_(d_model), heads_(heads) {
  qkv_ = register_module("qkv", torch::nn::Linear(d_model, 3 * d_model));
  out_ = register_module("out", torch::nn::Linear(d_model, d_model));
  ff1_ = register_module("ff1", torch::nn::Linear(d_model, d_ff));
  ff2_ = register_module("ff2", torch::nn::Linear(d_ff, d_model));
  norm1_ = register_module("norm1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d_model})));
  norm2_ = register_module("norm2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d_model})));
  attn_drop_ = register_module("attn_drop", RowDropout(dropout));
  drop_ = register_module("drop", RowDropout(dropout));
}

torch::Tensor NliAttentionBlockImpl::forward(const torch::Tensor& x, const torch::Tensor& mask) {
  const int64_t B = x.size(0), T = x.size(1), H = heads_, dh = d_ / heads_;
  auto qkv = qkv_->forward(x).view({B, T, 3, H, dh}).permute({2, 0, 3, 1, 4});  // [3, B, H, T, dh]
  auto q = qkv[0], k = qkv[1], v = qkv[2];
  const double scale = 1.0 / std::sqrt(static_cast<double>(dh));
  auto bias = at::zeros({B, 1, 1, T}, x.options())
                  .masked_fill(mask.logical_not().view({B, 1, 1, T}), -std::numeric_limits<double>::infinity());
  auto scores = at::matmul(q, k.transpose(-2, -1)) * scale + bias;  // [B, H, T, T]
  auto attn = attn_drop_->forward(at::softmax(scores, -1));
  auto ctx = at::matmul(attn, v).permute({0, 2, 1, 3}).reshape({B, T, d_});
  auto h = norm1_->forward(x + drop_->forward(out_->forward(ctx)));
  auto f = ff2_->forward(at::gelu(ff1_->forward(h)));
  return norm2_->forward(h + drop_->forward(f));
}

// ---------------------------------------------------------------------------------------------

GrassmannWindowLayerImpl::GrassmannWindowLayerImpl(const NliConfig& c)
    : d_(c.d_model), heads_(c.heads), r_(c.rank_per_head()), window_(c.window), eps_(c.eps) {
  reduce_ = register_module("reduce", torch::nn::Linear(d_, c.d_proj));
  plucker_ = register_module("plucker", torch::nn::Linear(heads_ * pluecker_dim(r_), d_));
  gate_ = register_module("gate", torch::nn::Linear(2 * d_, d_));
  ff1_ = register_module("ff1", torch::nn::Linear(d_, c.d_ff));
  ff2_ = register_module("ff2", torch::nn::Linear(c.d_ff, d_));
  norm1_ = register_module("norm1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d_})));
  norm2_ = register_module("norm2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d_})));
  drop_ = register_module("drop", RowDropout(c.dropout));
}

torch::Tensor GrassmannWindowLayerImpl::pluecker_features(const torch::Tensor& x, const torch::Tensor& mask) {
  const int64_t B = x.size(0), T = x.size(1), H = heads_, r = r_, w = window_;
  TORCH_CHECK(T % w == 0, "sequence length ", T, " is not a multiple of the window ", w);
  const int64_t nW = T / w;
  auto m = mask.to(x.scalar_type()).view({B, nW, w, 1, 1});
  auto z = reduce_->forward(x).view({B, nW, w, H, r}) * m;         // padding rows -> 0
  auto count = m.sum(2, /*keepdim=*/true).clamp_min(1.0);           // real tokens per window
  auto mean = z.sum(2, /*keepdim=*/true) / count;                   // [B, nW, 1, H, r]
  auto p = pluecker_coords(z, mean.expand_as(z));                   // [B, nW, w, H, C]
  auto norm = p.norm(2, -1, /*keepdim=*/true).clamp_min(eps_);
  return (p / norm).reshape({B, T, H * pluecker_dim(r)});
}

torch::Tensor GrassmannWindowLayerImpl::forward(const torch::Tensor& x, const torch::Tensor& mask) {
  auto p_hat = pluecker_features(x, mask);
  if (ablate_) p_hat = at::zeros_like(p_hat);
  auto g = plucker_->forward(p_hat);                                       // [B, T, d]
  auto alpha = at::sigmoid(gate_->forward(at::cat({x, g}, -1)));
  auto mixed = drop_->forward(norm1_->forward(alpha * x + (1 - alpha) * g));
  auto f = ff2_->forward(at::gelu(ff1_->forward(mixed)));
  return norm2_->forward(mixed + drop_->forward(f));
}

// ---------------------------------------------------------------------------------------------

NliModelImpl::NliModelImpl(const NliConfig& config, const torch::Tensor& vocab_map) : config_(config) {
  config_.validate();
  const auto& c = config_;
  at::Tensor map = vocab_map;
  if (!map.defined()) {
    map = at::arange(c.full_vocab, at::kLong).clamp_max(c.vocab_rows - 1);
  }
  TORCH_CHECK(map.dim() == 1 && map.size(0) == c.full_vocab, "vocab map must be [full_vocab]");
  if (c.vocab_rows < 4) throw InputError("NLI model config: vocab_rows must be >= 4");
  vocab_map_ = register_buffer("vocab_map", map.to(at::kLong).clone());
  tok_ = register_module("tok", torch::nn::Embedding(c.vocab_rows, c.d_model));
  pos_ = register_module("pos", torch::nn::Embedding(c.max_len, c.d_model));
  seg_ = register_module("seg", torch::nn::Embedding(2, c.d_model));
  for (auto* e : {&tok_, &pos_, &seg_}) torch::nn::init::normal_((*e)->weight, 0.0, 0.02);
  emb_norm_ = register_module("emb_norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.d_model})));
  emb_drop_ = register_module("emb_drop", RowDropout(c.dropout));
  for (int64_t i = 0; i < c.encoder_layers; ++i)
    enc_layers_.push_back(register_module(fmt::format("enc{}", i), NliAttentionBlock(c.d_model, c.heads, c.d_ff, c.dropout)));
  for (int64_t i = 0; i < c.head_layers; ++i) {
    if (c.head == "grassmann") glayers_.push_back(register_module(fmt::format("head{}", i), GrassmannWindowLayer(c)));
    else tlayers_.push_back(register_module(fmt::format("head{}", i), NliAttentionBlock(c.d_model, c.heads, c.d_ff, c.dropout)));
  }
  pool_drop_ = register_module("pool_drop", RowDropout(c.dropout));
  classifier_ = register_module("classifier", torch::nn::Linear(c.d_model, c.classes));
}

torch::Tensor NliModelImpl::encode(const torch::Tensor& ids, const torch::Tensor& segments, const torch::Tensor& mask) {
  const int64_t T = ids.size(1);
  if (T > config_.max_len)
    throw InputError(fmt::format("sequence of {} tokens exceeds the position table ({})", T, config_.max_len));
  auto rows = vocab_map_.index_select(0, ids.reshape({-1})).view(ids.sizes());
  auto pos = at::arange(T, ids.options().dtype(at::kLong));
  auto x = tok_->forward(rows) + pos_->forward(pos).unsqueeze(0) + seg_->forward(segments);
  x = emb_drop_->forward(emb_norm_->forward(x));
  for (auto& l : enc_layers_) x = l->forward(x, mask);
  return x;
}

torch::Tensor NliModelImpl::head_forward(const torch::Tensor& features, const torch::Tensor& mask) {
  auto x = features;
  auto m = mask;
  const int64_t T = x.size(1);
  if (!glayers_.empty()) std::tie(x, m) = pad_to_multiple(x, m, config_.window);
  for (auto& l : glayers_) x = l->forward(x, m);
  for (auto& l : tlayers_) x = l->forward(x, m);
  x = x.narrow(1, 0, T);
  auto mf = mask.to(x.scalar_type()).unsqueeze(-1);                         // [B, T, 1]
  auto pooled = (x * mf).sum(1) / mf.sum(1).clamp_min(1.0);                // masked mean
  return classifier_->forward(pool_drop_->forward(pooled));
}

torch::Tensor NliModelImpl::forward(const torch::Tensor& ids, const torch::Tensor& segments, const torch::Tensor& mask) {
  return head_forward(encode(ids, segments, mask), mask);
}

int64_t NliModelImpl::parameter_count() const {
  int64_t n = 0;
  for (const auto& p : parameters()) n += p.numel();
  return n;
}

int64_t NliModelImpl::head_parameter_count() const {
  int64_t n = 0;
  for (const auto& kv : named_parameters()) {
    const std::string& k = kv.key();
    if (k.rfind("head", 0) == 0 || k.rfind("classifier", 0) == 0) n += kv.value().numel();
  }
  return n;
}


void NliModelImpl::set_ablate_pluecker(bool on) {
  for (auto& l : glayers_) l->set_ablate_pluecker(on);
}

}  // namespace grassaudit
