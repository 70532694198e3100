#include "core/attention_mixer.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/attention_masks.h"
#include "core/attention_reference.h"
#include "core/model_config.h"
#include "util/error.h"

namespace grassaudit {

void check_attention_heads(int64_t d_model, int64_t heads) {
  if (heads < 1) throw InputError(fmt::format("attention: heads must be >= 1, got {}", heads));
  if (d_model % heads != 0)
    throw InputError(fmt::format("attention: d_model ({}) must be divisible by heads ({})", d_model, heads));
}

AttentionParamsImpl::AttentionParamsImpl(int64_t d_model, int64_t heads, double dropout, bool pre_norm)
    : d_model_(d_model), heads_(heads), pre_norm_(pre_norm) {
  check_attention_heads(d_model, heads);
  in_proj_ = register_module("in_proj", torch::nn::Linear(d_model, 3 * d_model));
  out_proj_ = register_module("out_proj", torch::nn::Linear(d_model, d_model));
  norm_ = register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d_model})));
  attn_dropout_ = register_module("attn_dropout", RowDropout(dropout));
  dropout_ = register_module("dropout", RowDropout(dropout));
}

namespace {

// Additive causal bias for query rows [row0, row0 + rows) against keys [0, row0 + rows):
// 0 where key j <= query i, -inf above the diagonal, so the softmax puts exactly zero weight
// on the future (the audit's gradient check relies on it).
at::Tensor causal_bias(int64_t row0, int64_t rows, const at::TensorOptions& opts) {
  auto bias = at::zeros({rows, row0 + rows}, opts);
  auto blocked = causal_mask(rows, opts.device()).logical_not();
  bias.narrow(1, row0, rows).masked_fill_(blocked, -std::numeric_limits<double>::infinity());
  return bias;
}

// Queries per block in the long-sequence path. Below kChunkFrom one block covers all queries.
constexpr int64_t kQueryChunk = 256;
constexpr int64_t kChunkFrom = 1024;

}  // namespace

// h: [B, L, d] -> [B, L, d]. Same function as nn.MultiheadAttention + residual + LayerNorm, in
// its fast form: one packed in-projection GEMM, q/k/v made contiguous [B*H, L, dh] once,
// scale and mask fused into the score GEMM (baddbmm with an additive 0/-inf bias, as
// F.multi_head_attention_forward does). For long sequences the queries are processed in
// blocks of 256 that only read keys up to their block's end: the masked upper triangle is
// never computed (about half the FLOPs and score memory at large L), with identical results.
torch::Tensor AttentionMixerImpl::forward(const torch::Tensor& h) {
  const int64_t B = h.size(0), L = h.size(1), d = d_model_;
  return sublayer(h.reshape({B * L, d}), [&](const torch::Tensor& x) { return attend(x, B, L); }).view(h.sizes());
}

// x: [B*L, d] -> out_proj(MHA(x)) [B*L, d], before dropout, residual and LayerNorm.
torch::Tensor AttentionMixerImpl::attend(const torch::Tensor& h2, int64_t B, int64_t L) {
  const int64_t H = heads_, dh = d_model_ / heads_, d = d_model_;
  auto qkv = at::addmm(in_proj_->bias, h2, in_proj_->weight.t())          // [B*L, 3d]
                 .view({B, L, 3, H, dh})
                 .permute({2, 0, 3, 1, 4})
                 .contiguous()
                 .view({3, B * H, L, dh});
  auto parts_qkv = qkv.unbind(0);  // one stacked gradient in backward, not 3 zero-filled selects
  auto q = parts_qkv[0], k = parts_qkv[1], v = parts_qkv[2];              // [B*H, L, dh]
  const double scale = 1.0 / std::sqrt(static_cast<double>(dh));
  at::Tensor ctx;                                                         // [B*H, L, dh]
  if (L < kChunkFrom) {
    auto scores = at::baddbmm(causal_bias(0, L, h2.options()), q, k.transpose(1, 2), 1.0, scale);
    ctx = at::bmm(attn_dropout_->forward(at::softmax(scores, -1)), v);
  } else {
    std::vector<at::Tensor> parts;
    for (int64_t s = 0; s < L; s += kQueryChunk) {
      const int64_t rows = std::min(kQueryChunk, L - s), keys = s + rows;
      auto scores = at::baddbmm(causal_bias(s, rows, h2.options()), q.narrow(1, s, rows),
                                k.narrow(1, 0, keys).transpose(1, 2), 1.0, scale);
      parts.push_back(at::bmm(attn_dropout_->forward(at::softmax(scores, -1)), v.narrow(1, 0, keys)));
    }
    ctx = at::cat(parts, 1);
  }
  ctx = ctx.view({B, H, L, dh}).permute({0, 2, 1, 3}).reshape({B * L, d});
  return at::addmm(out_proj_->bias, ctx, out_proj_->weight.t());
}

// h: [B, n, d], positions T .. T+n-1 (T = cache.offset) -> [B, n, d]. The new queries attend
// to the cached keys 0 .. T-1 and causally among themselves: the rows T .. T+n-1 of forward().
torch::Tensor AttentionParamsImpl::step(const torch::Tensor& h, MixerCache& cache) {
  const int64_t B = h.size(0), n = h.size(1), d = d_model_, H = heads_, dh = d_model_ / heads_;
  const int64_t T = cache.offset;
  auto attn = [&](const torch::Tensor& x) {                                // x: [B*n, d]
    auto qkv = at::addmm(in_proj_->bias, x, in_proj_->weight.t())
                   .view({B, n, 3, H, dh})
                   .permute({2, 0, 3, 1, 4})
                   .contiguous()
                   .view({3, B * H, n, dh});
    auto parts = qkv.unbind(0);
    auto k = T == 0 ? parts[1] : at::cat({cache.tensors.at(0), parts[1]}, 1);  // [B*H, T+n, dh]
    auto v = T == 0 ? parts[2] : at::cat({cache.tensors.at(1), parts[2]}, 1);
    cache.tensors = {k, v};
    const double scale = 1.0 / std::sqrt(static_cast<double>(dh));
    auto scores = at::baddbmm(causal_bias(T, n, x.options()), parts[0], k.transpose(1, 2), 1.0, scale);
    auto ctx = at::bmm(attn_dropout_->forward(at::softmax(scores, -1)), v);  // [B*H, n, dh]
    ctx = ctx.view({B, H, n, dh}).permute({0, 2, 1, 3}).reshape({B * n, d});
    return at::addmm(out_proj_->bias, ctx, out_proj_->weight.t());
  };
  auto out = sublayer(h.reshape({B * n, d}), attn).view(h.sizes());
  cache.offset = T + n;
  return out;
}

void register_attention_mixers(MixerRegistry& registry) {
  MixerInfo fast;
  fast.name = "attention";
  fast.summary = "causally masked multi-head self-attention (baseline)";
  fast.base_name = "attention";
  fast.reference_twin = "literal-attention";
  const MixerKind kind = public_mixer_kind(fast.base_name);
  fast.family = kind.family;
  fast.pairing = kind.pairing;
  registry.add(fast, [](const ModelConfig& cfg, int64_t) -> std::shared_ptr<TokenMixerImpl> {
    return std::make_shared<AttentionMixerImpl>(cfg.d_model, cfg.heads, cfg.dropout, cfg.pre_norm());
  });
  MixerInfo ref = fast;
  ref.name = "literal-attention";
  ref.summary = "attention, textbook reference path: per-head loop, full [L, L] mask (slow; for tests and bench)";
  ref.reference_twin.clear();
  ref.is_reference = true;
  registry.add(ref, [](const ModelConfig& cfg, int64_t) -> std::shared_ptr<TokenMixerImpl> {
    return std::make_shared<AttentionReferenceImpl>(cfg.d_model, cfg.heads, cfg.dropout, cfg.pre_norm());
  });
}

}  // namespace grassaudit
