#include "train/fused_adamw.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <immintrin.h>

#include <cmath>
#include <sstream>
#include <type_traits>

#include "runtime/cpu_features.h"

namespace grassaudit {
namespace {

// LibTorch's key for a parameter's state: the TensorImpl's address, as a string (LibTorch 1.x)
// or as the pointer itself (2.x).
template <class Map>
typename Map::key_type state_key(const at::Tensor& p) {
  if constexpr (std::is_same_v<typename Map::key_type, std::string>) {
    std::ostringstream s;
    s << static_cast<void*>(p.unsafeGetTensorImpl());
    return s.str();
  } else {
    return static_cast<void*>(p.unsafeGetTensorImpl());
  }
}

// Element i: p = p * decay; m = beta1 m + (1 - beta1) g; v = beta2 v + (1 - beta2) g^2;
// p += neg_step_size * m / (sqrt(v) / sqrt(bias2) + eps). Written with the same fused
// multiply-adds as the AVX-512 loop, so every element gets the same bits whichever path (and so
// whichever thread split) computes it.
inline void update_one(float& p, float g, float& m, float& v, const AdamWCoefficients& c) {
  m = std::fma(c.one_minus_beta1, g, m * c.beta1);
  v = std::fma(c.one_minus_beta2 * g, g, v * c.beta2);
  const float denom = std::fma(std::sqrt(v), c.inv_sqrt_bias2, c.eps);
  p = std::fma(c.neg_step_size, m / denom, p * c.decay);
}

void update_scalar(float* p, const float* g, float* m, float* v, int64_t n, const AdamWCoefficients& c) {
  for (int64_t i = 0; i < n; ++i) update_one(p[i], g[i], m[i], v[i], c);
}

GRASSAUDIT_AVX512_KERNEL void update_avx512(float* p, const float* g, float* m, float* v, int64_t n,
                                     const AdamWCoefficients& c) {
  const __m512 decay = _mm512_set1_ps(c.decay), b1 = _mm512_set1_ps(c.beta1), c1 = _mm512_set1_ps(c.one_minus_beta1),
               b2 = _mm512_set1_ps(c.beta2), c2 = _mm512_set1_ps(c.one_minus_beta2),
               inv = _mm512_set1_ps(c.inv_sqrt_bias2), eps = _mm512_set1_ps(c.eps),
               step = _mm512_set1_ps(c.neg_step_size);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 gi = _mm512_loadu_ps(g + i);
    const __m512 mi = _mm512_fmadd_ps(c1, gi, _mm512_mul_ps(_mm512_loadu_ps(m + i), b1));
    const __m512 vi = _mm512_fmadd_ps(_mm512_mul_ps(c2, gi), gi, _mm512_mul_ps(_mm512_loadu_ps(v + i), b2));
    const __m512 denom = _mm512_fmadd_ps(_mm512_sqrt_ps(vi), inv, eps);
    const __m512 pi = _mm512_mul_ps(_mm512_loadu_ps(p + i), decay);
    _mm512_storeu_ps(m + i, mi);
    _mm512_storeu_ps(v + i, vi);
    _mm512_storeu_ps(p + i, _mm512_fmadd_ps(step, _mm512_div_ps(mi, denom), pi));
  }
  update_scalar(p + i, g + i, m + i, v + i, n - i, c);
}

// LibTorch's AdamW::step for one parameter, op for op (the parameters the fused pass does not take).
void reference_update(at::Tensor& p, const at::Tensor& grad, torch::optim::AdamWParamState& s,
                      const torch::optim::AdamWOptions& o) {
  if (o.weight_decay() != 0) p.mul_(1 - o.lr() * o.weight_decay());
  auto& exp_avg = s.exp_avg();
  auto& exp_avg_sq = s.exp_avg_sq();
  const double bias1 = 1 - std::pow(std::get<0>(o.betas()), s.step());
  const double bias2 = 1 - std::pow(std::get<1>(o.betas()), s.step());
  exp_avg.mul_(std::get<0>(o.betas())).add_(grad, 1 - std::get<0>(o.betas()));
  exp_avg_sq.mul_(std::get<1>(o.betas())).addcmul_(grad, grad, 1 - std::get<1>(o.betas()));
  at::Tensor denom;
  if (o.amsgrad()) {
    auto& max_exp_avg_sq = s.max_exp_avg_sq();
    at::max_out(max_exp_avg_sq, exp_avg_sq, max_exp_avg_sq);
    denom = (max_exp_avg_sq.sqrt() / std::sqrt(bias2)).add_(o.eps());
  } else {
    denom = (exp_avg_sq.sqrt() / std::sqrt(bias2)).add_(o.eps());
  }
  p.addcdiv_(exp_avg, denom, -o.lr() / bias1);
}

bool fusable(const at::Tensor& p, const at::Tensor& grad, const torch::optim::AdamWParamState& s,
             const torch::optim::AdamWOptions& o) {
  auto plain = [&](const at::Tensor& t) {
    return t.device().is_cpu() && t.scalar_type() == at::kFloat && t.is_contiguous() && t.numel() == p.numel() &&
           t.layout() == at::kStrided;
  };
  return !o.amsgrad() && plain(p) && plain(grad) && plain(s.exp_avg()) && plain(s.exp_avg_sq());
}

}  // namespace

void fused_adamw_update(float* p, const float* g, float* m, float* v, int64_t n, const AdamWCoefficients& c) {
  at::parallel_for(0, n, 16384, [&](int64_t i0, int64_t i1) {
    if (cpu_runs_avx512_kernels())
      update_avx512(p + i0, g + i0, m + i0, v + i0, i1 - i0, c);
    else
      update_scalar(p + i0, g + i0, m + i0, v + i0, i1 - i0, c);
  });
}

at::Tensor FusedAdamW::step(LossClosure closure) {
  at::NoGradGuard no_grad;
  at::Tensor loss;
  if (closure) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  for (auto& group : param_groups_) {
    auto& o = static_cast<torch::optim::AdamWOptions&>(group.options());
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      const auto& grad = p.grad();
      TORCH_CHECK(!grad.is_sparse(), "AdamW does not support sparse gradients");
      const auto key = state_key<decltype(state_)>(p);
      auto it = state_.find(key);
      if (it == state_.end()) {  // as LibTorch's AdamW initialises it
        auto s = std::make_unique<torch::optim::AdamWParamState>();
        s->step(0);
        s->exp_avg(torch::zeros_like(p, at::MemoryFormat::Preserve));
        s->exp_avg_sq(torch::zeros_like(p, at::MemoryFormat::Preserve));
        if (o.amsgrad()) s->max_exp_avg_sq(torch::zeros_like(p, at::MemoryFormat::Preserve));
        it = state_.emplace(key, std::move(s)).first;
      }
      auto& s = static_cast<torch::optim::AdamWParamState&>(*it->second);
      s.step(s.step() + 1);
      if (!fusable(p, grad, s, o)) {
        reference_update(p, grad, s, o);
        continue;
      }
      const double beta1 = std::get<0>(o.betas()), beta2 = std::get<1>(o.betas());
      const double bias1 = 1 - std::pow(beta1, s.step()), bias2 = 1 - std::pow(beta2, s.step());
      const AdamWCoefficients c{static_cast<float>(1 - o.lr() * o.weight_decay()),
                                static_cast<float>(beta1),
                                static_cast<float>(1 - beta1),
                                static_cast<float>(beta2),
                                static_cast<float>(1 - beta2),
                                static_cast<float>(1 / std::sqrt(bias2)),
                                static_cast<float>(o.eps()),
                                static_cast<float>(-o.lr() / bias1)};
      fused_adamw_update(p.data_ptr<float>(), grad.data_ptr<float>(), s.exp_avg().data_ptr<float>(),
                         s.exp_avg_sq().data_ptr<float>(), p.numel(), c);
    }
  }
  return loss;
}

}  // namespace grassaudit
