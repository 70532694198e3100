#include "core/grassmann_mixer.h"

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>

#include "core/bf16_linear.h"
#include "core/model_config.h"
#include "core/pluecker.h"
#include "runtime/runtime.h"
#include "util/error.h"

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
  // register_module names are checkpoint keys (pinned by tests/core/test_checkpoint_keys.cpp).
  // "pluecker" was "plucker" before; checkpoint.cpp still loads archives with the old key.
  reduce_ = register_module("reduce", torch::nn::Linear(d, r));
  pluecker_ = register_module("pluecker", torch::nn::Linear(pluecker_dim(r), d));
  gate_ = register_module("gate", torch::nn::Linear(2 * d, d));
  norm_ = register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d})));
  dropout_ = register_module("dropout", RowDropout(options_.dropout));
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
    auto gD = pluecker_->forward(p / norm);                                // [B, L-D, d]
    sum = sum + scatter_rows(gD, L, s.start);
  }
  auto count = valid_offset_count(L, options_.offsets, options_.direction, z.options());
  return sum / count.clamp_min(1).view({1, L, 1});
}

// z: [B, L, r] -> g: [B, L, d]. Fast: c_t = (1/|W_t|) sum_D z_partner / max(||z_t ^ z_partner||, eps)
// (norms by Lagrange's identity, one fused loop: pluecker_partner_mean), then ONE wedge z_t ^ c_t
// ([B, L, C], one gather-free loop: pluecker_wedge) and one projection per token. Positions with
// no valid offset get g_t = 0: c_t = 0 there so the wedge is 0, and the bias is added only on
// positions that have a partner.
torch::Tensor GrassmannMixerImpl::geometry_fast(const torch::Tensor& z_in) {
  // Under CPU bf16 autocast z comes out of W_red in bf16: the fused loops run in float32, the
  // projection GEMM below in bf16 (at::mm is on autocast's lower-precision list).
  const auto z = z_in.scalar_type() == at::kBFloat16 ? z_in.to(at::kFloat) : z_in;
  const int64_t B = z.size(0), L = z.size(1), r = z.size(2), d = options_.d_model;
  auto c = pluecker_partner_mean(z, options_.offsets, options_.direction == PairDirection::kFuture, options_.eps);
  auto wedge = pluecker_wedge(z, c);                                        // [B, L, C]
  auto g = at::mm(wedge.view({B * L, pluecker_dim(r)}), pluecker_->weight.t()).view({B, L, d});
  auto count = valid_offset_count(L, options_.offsets, options_.direction, z.options());
  auto has_any = (count > 0).to(z.scalar_type()).view({L, 1});
  return g + has_any * pluecker_->bias;                                      // bias: [L, d] rows
}

namespace {
// mixed = alpha * h + (1 - alpha) * g with alpha = sigmoid(pre), as one autograd node: one
// fused loop forward (after a vectorised sigmoid), one fused loop backward
// (grad_pre = gm (h - g) alpha (1 - alpha), grad_h = gm alpha, grad_g = gm (1 - alpha)).
struct GateBlendFunction : public torch::autograd::Function<GateBlendFunction> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& pre, const at::Tensor& h_in,
                            const at::Tensor& g_in) {
    auto alpha = at::sigmoid(pre).contiguous();
    auto h = h_in.contiguous(), g = g_in.contiguous();
    auto out = at::empty_like(alpha);
    const int64_t n = out.numel();
    AT_DISPATCH_FLOATING_TYPES(out.scalar_type(), "gate_blend", [&] {
      const scalar_t* a = alpha.data_ptr<scalar_t>();
      const scalar_t* hp = h.data_ptr<scalar_t>();
      const scalar_t* gp = g.data_ptr<scalar_t>();
      scalar_t* o = out.data_ptr<scalar_t>();
      at::parallel_for(0, n, 32768, [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) o[i] = a[i] * hp[i] + (scalar_t(1) - a[i]) * gp[i];
      });
    });
    ctx->save_for_backward({alpha, h, g});
    return out;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    auto saved = ctx->get_saved_variables();
    auto alpha = saved[0], h = saved[1], g = saved[2];
    auto gm = grads[0].contiguous();
    auto gpre = at::empty_like(alpha), gh = at::empty_like(alpha), gg = at::empty_like(alpha);
    const int64_t n = alpha.numel();
    AT_DISPATCH_FLOATING_TYPES(alpha.scalar_type(), "gate_blend_backward", [&] {
      const scalar_t* a = alpha.data_ptr<scalar_t>();
      const scalar_t* hp = h.data_ptr<scalar_t>();
      const scalar_t* gp = g.data_ptr<scalar_t>();
      const scalar_t* m = gm.data_ptr<scalar_t>();
      scalar_t *op = gpre.data_ptr<scalar_t>(), *oh = gh.data_ptr<scalar_t>(), *og = gg.data_ptr<scalar_t>();
      at::parallel_for(0, n, 32768, [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) {
          const scalar_t ai = a[i], mi = m[i], bi = scalar_t(1) - ai;
          op[i] = mi * (hp[i] - gp[i]) * ai * bi;
          oh[i] = mi * ai;
          og[i] = mi * bi;
        }
      });
    });
    return {gpre, gh, gg};
  }
};
}  // namespace

// Fast gate: W_gate [h; g] as two GEMMs on the weight's halves (no [B, L, 2d] concatenation),
// the second accumulated in place, then the fused blend. h_gemm: h as the first GEMM reads it (h
// itself, or its bf16 copy under CPU bf16 autocast); undefined means h.
torch::Tensor GrassmannMixerImpl::gate_blend_fast(const torch::Tensor& h, const torch::Tensor& g,
                                                  const torch::Tensor& h_gemm) {
  const int64_t d = options_.d_model;
  auto h2 = h.reshape({-1, d}), g2 = g.reshape({-1, d});
  const auto& W = gate_->weight;                                        // [d, 2d]
  auto pre = at::addmm(gate_->bias, h_gemm.defined() ? h_gemm.reshape({-1, d}) : h2, W.narrow(1, 0, d).t());
  if (pre.scalar_type() != h2.scalar_type()) {
    // CPU bf16 autocast: both GEMMs in bf16, summed and blended in the sublayer's float32
    // (addmm_ is in place, which autocast does not cast; the blend's loop is float32/float64).
    pre = pre.to(h2.scalar_type()) + at::mm(g2, W.narrow(1, d, d).t());
    return GateBlendFunction::apply(pre, h2, g2.to(h2.scalar_type())).view(h.sizes());
  }
  pre.addmm_(g2, W.narrow(1, d, d).t());
  return GateBlendFunction::apply(pre, h2, g2).view(h.sizes());
}

// h, g: [B, L, d] -> alpha * h + (1 - alpha) * g, alpha = sigmoid(W_gate [h; g]).
torch::Tensor GrassmannMixerImpl::gate_blend(const torch::Tensor& h, const torch::Tensor& g) {
  auto alpha = at::sigmoid(gate_->forward(at::cat({h, g}, -1)));
  return alpha * h + (1 - alpha) * g;
}

// The sublayer around blend: post (the paper's) dropout(LN(blend(h, g(h))));
// pre h + dropout(blend(u, g(u))) with u = LN(h). h: [B, L, d] -> [B, L, d].
template <class Blend>
torch::Tensor GrassmannMixerImpl::sublayer(const torch::Tensor& h, Blend&& blend) {
  if (!options_.pre_norm) return dropout_->forward(norm_->forward(blend(h)));
  return h + dropout_->forward(blend(norm_->forward(h)));
}

torch::Tensor GrassmannMixerImpl::forward_fast(const torch::Tensor& h) {
  return sublayer(h, [&](const torch::Tensor& x) {
    // Under CPU bf16 autocast x is cast once for the two GEMMs that read it (W_red and the gate's
    // first half); autocast would cast it at each use, and convert each use's gradient back.
    const auto xg = x.device().is_cpu() && cpu_bf16_autocast() ? x.to(at::kBFloat16) : x;
    return gate_blend_fast(x, geometry_fast(linear_rows(*reduce_, xg)), xg);
  });
}

torch::Tensor GrassmannMixerImpl::forward_literal(const torch::Tensor& h) {
  return sublayer(h, [&](const torch::Tensor& x) { return gate_blend(x, geometry_literal(reduce_->forward(x))); });
}

torch::Tensor GrassmannMixerImpl::forward(const torch::Tensor& h) {
  // The fast path's fused loops (pluecker_partner_mean, pluecker_wedge, the gate blend) are CPU
  // loops over raw pointers; on any other device the literal path computes the same function
  // with ATen ops alone (tests/core compare the two paths).
  return (options_.literal || !h.device().is_cpu()) ? forward_literal(h) : forward_fast(h);
}

std::string GrassmannMixerImpl::incremental_unsupported() const {
  return "the future mixer pairs z_t with z_{t+D}: its output at t needs tokens that do not exist yet, so it has no "
         "incremental path (no generation, no streaming)";
}

// h: [B, n, d], positions T .. T+n-1 (T = cache.offset) -> [B, n, d], forward()'s rows for them.
// z_ext = [kept z of the last min(T, maxD) positions ; z of the new ones]: every partner t - D >= 0
// of a new position is in z_ext, and one that is not has t - D < 0, where forward() has none
// either, so the partner mean over z_ext is forward()'s for the new rows.
torch::Tensor GrassmannMixerImpl::step(const torch::Tensor& h, MixerCache& cache) {
  if (!has_incremental()) throw InputError(incremental_unsupported());
  const int64_t B = h.size(0), n = h.size(1), r = options_.rank, d = options_.d_model;
  const int64_t max_d = *std::max_element(options_.offsets.begin(), options_.offsets.end());
  auto geometry_new = [&](const torch::Tensor& x) {                          // x: [B, n, d] -> g [B, n, d]
    auto z_new = reduce_->forward(x);                                        // [B, n, r]
    auto z = cache.tensors.empty() ? z_new : at::cat({cache.tensors[0], z_new}, 1);  // [B, m, r]
    const int64_t m = z.size(1), first = m - n;
    cache.tensors = {z.narrow(1, std::max<int64_t>(0, m - max_d), std::min(m, max_d)).contiguous()};
    auto c = pluecker_partner_mean(z, options_.offsets, /*future=*/false, options_.eps);
    auto wedge = pluecker_wedge(z.narrow(1, first, n), c.narrow(1, first, n));   // [B, n, C]
    auto g = at::mm(wedge.reshape({B * n, pluecker_dim(r)}), pluecker_->weight.t()).view({B, n, d});
    auto count = valid_offset_count(m, options_.offsets, options_.direction, z.options()).narrow(0, first, n);
    return g + (count > 0).to(z.scalar_type()).view({n, 1}) * pluecker_->bias;
  };
  auto out = sublayer(h, [&](const torch::Tensor& x) {
    return options_.literal ? gate_blend(x, geometry_new(x)) : gate_blend_fast(x, geometry_new(x));
  });
  cache.offset += n;
  return out;
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
      o.pre_norm = cfg.pre_norm();
      return std::make_shared<GrassmannMixerImpl>(o);
    };
  };
  auto info = [](std::string name, std::string summary, std::string base, std::string twin) {
    MixerInfo m;
    m.name = std::move(name);
    m.summary = std::move(summary);
    m.base_name = std::move(base);
    m.reference_twin = std::move(twin);
    const MixerKind kind = public_mixer_kind(m.base_name);
    m.family = kind.family;
    m.pairing = kind.pairing;
    m.is_reference = m.reference_twin.empty();  // the literal paths are the references
    return m;
  };
  // Each reading of the pairing is a fast path and its literal twin "literal-<reading>", the
  // reference it is tested against; the fast paths are registered first.
  struct Reading {
    PairDirection direction;
    std::string base, summary;
  };
  const Reading readings[] = {
      {PairDirection::kFuture, "future", "Grassmann, pairs (z_t, z_{t+D}): the paper read literally (sees the future)"},
      {PairDirection::kPast, "past", "Grassmann, pairs (z_t, z_{t-D}): the public reproductions' reading (causal)"}};
  for (const Reading& r : readings)
    registry.add(info(r.base, r.summary, r.base, "literal-" + r.base), make(r.direction, false));
  for (const Reading& r : readings)
    registry.add(info("literal-" + r.base, r.base + ", literal per-offset reference path (slow; for tests and bench)",
                      r.base, ""),
                 make(r.direction, true));
}

}  // namespace grassaudit
