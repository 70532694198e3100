#include "core/bf16_xent_rows.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "runtime/cpu_features.h"

namespace grassaudit {
namespace {

// bf16 bits -> float32: the bf16 value is the float's upper half.
inline float bf16_to_float(uint16_t v) {
  const uint32_t bits = static_cast<uint32_t>(v) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// float32 -> bf16 bits, rounded to nearest even, NaN as 0x7FC0: c10::BFloat16's conversion.
inline uint16_t float_to_bf16(float f) {
  if (std::isnan(f)) return 0x7FC0;
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return static_cast<uint16_t>((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

// One row of V logits z (bf16 bits), target t, gradient scale c (want_grad) -> the row's loss;
// z overwritten with the gradient. scratch: V floats.
float row_scalar(uint16_t* z, int64_t V, int64_t t, float c, bool want_grad, float* scratch) {
  float m = -INFINITY;
  for (int64_t v = 0; v < V; ++v) m = std::max(m, bf16_to_float(z[v]));
  // Sixteen partial sums, as the vectorised kernel keeps them: a float32 sum of 30,000 terms in
  // one running total loses several times more to rounding.
  float lanes[16] = {};
  for (int64_t v = 0; v < V; ++v) {
    const float e = std::exp(bf16_to_float(z[v]) - m);
    scratch[v] = e;
    lanes[v % 16] += e;
  }
  float s = 0;
  for (float x : lanes) s += x;
  const float loss = std::log(s) - (bf16_to_float(z[t]) - m);
  if (!want_grad) return loss;
  const float k = c / s;
  for (int64_t v = 0; v < V; ++v) z[v] = float_to_bf16(scratch[v] * k);
  z[t] = float_to_bf16(scratch[t] * k - c);
  return loss;
}

// 16 bf16 values (lanes outside m read as 0) -> float32.
GRASSAUDIT_AVX512_KERNEL inline __m512 load_bf16(const uint16_t* p, __mmask16 m) {
  const __m256i h = _mm256_maskz_loadu_epi16(m, p);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

// 16 float32 -> bf16 bits (nearest even, NaN as 0x7FC0), stored to the lanes in m.
GRASSAUDIT_AVX512_KERNEL inline void store_bf16(uint16_t* p, __m512 x, __mmask16 m) {
  const __m512i bits = _mm512_castps_si512(x);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
  __m512i r = _mm512_srli_epi32(_mm512_add_epi32(bits, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7FFF))), 16);
  r = _mm512_mask_mov_epi32(r, _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), _mm512_set1_epi32(0x7FC0));
  _mm256_mask_storeu_epi16(p, m, _mm512_cvtepi32_epi16(r));
}

// exp(x) for x <= 0 (Cephes' expf: x = n ln2 + r, |r| <= ln2 / 2, a degree-7 polynomial in r,
// then 2^n by scalef, which flushes to 0 below the smallest float). NaN stays NaN: max's second
// operand is returned when either is NaN.
GRASSAUDIT_AVX512_KERNEL inline __m512 exp_nonpositive(__m512 x) {
  x = _mm512_max_ps(_mm512_set1_ps(-104.0f), x);
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  return _mm512_scalef_ps(p, n);
}

// row_scalar's function, 16 columns at a time; the sum is kept in 16 lanes and reduced in a fixed
// order at the end.
GRASSAUDIT_AVX512_KERNEL float row_avx512(uint16_t* z, int64_t V, int64_t t, float c, bool want_grad, float* scratch) {
  const int64_t full = V / 16 * 16;
  const __mmask16 tail = static_cast<__mmask16>((1u << (V - full)) - 1u);
  __m512 mx = _mm512_set1_ps(-INFINITY);
  for (int64_t v = 0; v < full; v += 16) mx = _mm512_max_ps(mx, load_bf16(z + v, 0xFFFF));
  if (tail) mx = _mm512_mask_max_ps(mx, tail, mx, load_bf16(z + full, tail));
  const float m = _mm512_reduce_max_ps(mx);
  const __m512 mv = _mm512_set1_ps(m);
  __m512 acc = _mm512_setzero_ps();
  for (int64_t v = 0; v < full; v += 16) {
    const __m512 e = exp_nonpositive(_mm512_sub_ps(load_bf16(z + v, 0xFFFF), mv));
    _mm512_storeu_ps(scratch + v, e);
    acc = _mm512_add_ps(acc, e);
  }
  if (tail) {
    const __m512 e = exp_nonpositive(_mm512_sub_ps(load_bf16(z + full, tail), mv));
    _mm512_mask_storeu_ps(scratch + full, tail, e);
    acc = _mm512_mask_add_ps(acc, tail, acc, e);
  }
  const float s = _mm512_reduce_add_ps(acc);
  const float loss = std::log(s) - (bf16_to_float(z[t]) - m);
  if (!want_grad) return loss;
  const float k = c / s;
  const __m512 kv = _mm512_set1_ps(k);
  for (int64_t v = 0; v < full; v += 16) store_bf16(z + v, _mm512_mul_ps(_mm512_loadu_ps(scratch + v), kv), 0xFFFF);
  if (tail) store_bf16(z + full, _mm512_mul_ps(_mm512_maskz_loadu_ps(tail, scratch + full), kv), tail);
  z[t] = float_to_bf16(scratch[t] * k - c);
  return loss;
}

}  // namespace

at::Tensor bf16_xent_rows(const at::Tensor& logits, const at::Tensor& targets, const at::Tensor& coef,
                          Bf16XentKernel kernel) {
  TORCH_CHECK(logits.dim() == 2 && logits.scalar_type() == at::kBFloat16 && logits.is_contiguous() &&
                  logits.device().is_cpu(),
              "bf16_xent_rows: logits must be a contiguous CPU bf16 [n, V], got ", logits.sizes(), " ",
              logits.scalar_type());
  const int64_t n = logits.size(0), V = logits.size(1);
  TORCH_CHECK(V >= 1, "bf16_xent_rows: V must be >= 1");
  TORCH_CHECK(targets.dim() == 1 && targets.size(0) == n && targets.scalar_type() == at::kLong,
              "bf16_xent_rows: targets must be int64 [n]");
  const bool want_grad = coef.defined();
  TORCH_CHECK(!want_grad || (coef.dim() == 1 && coef.size(0) == n && coef.scalar_type() == at::kFloat),
              "bf16_xent_rows: coef must be float32 [n]");
  const auto t = targets.contiguous();
  const auto c = want_grad ? coef.contiguous() : coef;
  const int64_t* tp = t.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i) TORCH_CHECK(tp[i] >= 0 && tp[i] < V, "bf16_xent_rows: target ", tp[i], " outside [0, ", V, ")");
  const float* cp = want_grad ? c.data_ptr<float>() : nullptr;
  auto* z = reinterpret_cast<uint16_t*>(logits.data_ptr<at::BFloat16>());
  auto loss = at::empty({n}, logits.options().dtype(at::kFloat));
  float* lp = loss.data_ptr<float>();
  const bool simd = kernel == Bf16XentKernel::kAuto && cpu_runs_avx512_kernels();
  // One row is tens of thousands of exponentials: a task of a single row is already coarse enough.
  at::parallel_for(0, n, 1, [&](int64_t r0, int64_t r1) {
    std::vector<float> scratch(static_cast<size_t>(V));
    for (int64_t r = r0; r < r1; ++r) {
      const float cr = want_grad ? cp[r] : 0.0f;
      lp[r] = simd ? row_avx512(z + r * V, V, tp[r], cr, want_grad, scratch.data())
                   : row_scalar(z + r * V, V, tp[r], cr, want_grad, scratch.data());
    }
  });
  return loss;
}

Bf16XentReference bf16_xent_rows_reference(const at::Tensor& logits, const at::Tensor& targets,
                                           const at::Tensor& coef) {
  const auto z = logits.to(at::kFloat);                               // [n, V]
  const auto t = targets.unsqueeze(1);                                // [n, 1]
  const auto lsm = at::log_softmax(z, 1);                             // [n, V]
  Bf16XentReference out;
  out.loss = lsm.gather(1, t).squeeze(1).neg();                       // [n]
  if (coef.defined()) {
    auto onehot = at::zeros_like(z).scatter_(1, t, 1.0);
    out.grad = (lsm.exp() - onehot) * coef.unsqueeze(1);               // [n, V]
  }
  return out;
}

}  // namespace grassaudit
