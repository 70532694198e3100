#include "core/row_dropout.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#include <torch/csrc/autograd/custom_function.h>
#include <fmt/format.h>

#include <immintrin.h>

#include <cmath>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <type_traits>

#include "runtime/cpu_features.h"

namespace grassaudit {
namespace {
// {global_rows, first, rows}; global_rows == 0: no scope.
thread_local std::array<int64_t, 3> g_rows = {0, 0, 0};

constexpr uint64_t kGamma = 0x9e3779b97f4a7c15ULL;  // splitmix64's increment (2^64 / golden ratio)

// splitmix64: the output for counter `index` of the stream `seed`. A bijective finaliser of
// seed + (index + 1) * gamma, so distinct indices of one call give independent-looking bits.
inline uint64_t splitmix64(uint64_t seed, uint64_t index) {
  uint64_t z = seed + (index + 1) * kGamma;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Element `index` is decided by one 32-bit half of splitmix64(seed, index / 2): one hash per two
// elements (the 64-bit multiplies are the kernel's cost).
inline uint32_t element_bits(uint64_t hash, uint64_t index) { return static_cast<uint32_t>(hash >> (32 * (index & 1))); }

inline bool keep(uint64_t seed, uint64_t index, uint64_t threshold) {
  return element_bits(splitmix64(seed, index >> 1), index) >= threshold;
}

uint64_t draw_seed() {
  auto gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  return at::check_generator<at::CPUGeneratorImpl>(gen)->random64();
}

bool hashed_kernel_applies(const at::Tensor& x) {
  return x.device().is_cpu() && (x.scalar_type() == at::kFloat || x.scalar_type() == at::kDouble ||
                                 x.scalar_type() == at::kBFloat16);
}

// The type the kernels multiply in: bf16 values are widened to float32 (exactly) and the product
// rounded once, so a bf16 tensor gets the bits that x.to(float), the float32 kernel and a cast back
// would give, without the two extra passes.
template <typename T>
struct MulType {
  using type = T;
};
template <>
struct MulType<c10::BFloat16> {
  using type = float;
};

constexpr int64_t kGrain = 16384;  // elements per parallel task

// mask [n]: element i (global index first + i) kept (1) or dropped (0), one element at a time.
void mask_scalar(uint8_t* mask, int64_t n, uint64_t seed, uint64_t first, uint64_t threshold) {
  uint64_t pair = ~uint64_t{0}, hash = 0;
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t index = first + static_cast<uint64_t>(i);
    if ((index >> 1) != pair) {
      pair = index >> 1;
      hash = splitmix64(seed, pair);
    }
    mask[i] = element_bits(hash, index) >= threshold;
  }
}

// The same mask, 16 elements (8 hashes) per step: the 8 splitmix64 outputs of consecutive pairs
// read as 16 uint32 lanes are the elements' 32-bit halves in element order (low half = even
// index), so one unsigned compare decides 16 elements. threshold < 2^32 (the caller's check).
GRASSAUDIT_AVX512_KERNEL void mask_avx512(uint8_t* mask, int64_t n, uint64_t seed, uint64_t first, uint64_t threshold) {
  int64_t i = 0;
  if (n > 0 && (first & 1)) {  // an odd first element: the high half of its pair, alone
    mask_scalar(mask, 1, seed, first, threshold);
    i = 1;
  }
  const __m512i lanes = _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0);
  const __m512i gamma = _mm512_set1_epi64(static_cast<long long>(kGamma));
  const __m512i m1 = _mm512_set1_epi64(static_cast<long long>(0xbf58476d1ce4e5b9ULL));
  const __m512i m2 = _mm512_set1_epi64(static_cast<long long>(0x94d049bb133111ebULL));
  const __m512i vseed = _mm512_set1_epi64(static_cast<long long>(seed));
  const __m512i thr = _mm512_set1_epi32(static_cast<int>(static_cast<uint32_t>(threshold)));
  const __m128i one = _mm_set1_epi8(1);
  for (; i + 16 <= n; i += 16) {
    const uint64_t pair0 = (first + static_cast<uint64_t>(i)) >> 1;  // even global index here
    const __m512i counter = _mm512_add_epi64(_mm512_set1_epi64(static_cast<long long>(pair0 + 1)), lanes);
    __m512i z = _mm512_add_epi64(vseed, _mm512_mullo_epi64(counter, gamma));
    z = _mm512_mullo_epi64(_mm512_xor_si512(z, _mm512_srli_epi64(z, 30)), m1);
    z = _mm512_mullo_epi64(_mm512_xor_si512(z, _mm512_srli_epi64(z, 27)), m2);
    z = _mm512_xor_si512(z, _mm512_srli_epi64(z, 31));
    const __mmask16 kept = _mm512_cmpge_epu32_mask(z, thr);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(mask + i), _mm_maskz_mov_epi8(kept, one));
  }
  if (i < n) mask_scalar(mask + i, n - i, seed, first + static_cast<uint64_t>(i), threshold);
}

void fill_mask(uint8_t* mask, int64_t n, uint64_t seed, uint64_t first, uint64_t threshold, DropoutMaskKernel kernel) {
  const bool simd = kernel == DropoutMaskKernel::kAuto && threshold <= std::numeric_limits<uint32_t>::max() &&
                    cpu_runs_avx512_kernels();
  if (simd)
    mask_avx512(mask, n, seed, first, threshold);
  else
    mask_scalar(mask, n, seed, first, threshold);
}

// out [n] = x [n] * (mask [n] * scale), multiplied in M (float for bf16) and rounded once, as
// ATen's x * noise (so inf * dropped = NaN there too). One element at a time.
template <typename T, typename M = typename MulType<T>::type>
void apply_mask_scalar(const T* x, const uint8_t* mask, T* out, int64_t n, M scale) {
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(static_cast<M>(x[i]) * (static_cast<M>(mask[i]) * scale));
}

// The same, 16 elements per step: the factor is scale where kept and +0 where dropped (what
// mask * scale is), the product one IEEE multiply; bf16 is widened exactly and rounded back to
// nearest-even with NaN as 0x7FC0, c10::BFloat16's own rounding.
GRASSAUDIT_AVX512_KERNEL void apply_mask_avx512(const float* x, const uint8_t* mask, float* out, int64_t n, float scale) {
  const __m512 s = _mm512_set1_ps(scale);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __mmask16 kept = _mm_test_epi8_mask(_mm_loadu_si128(reinterpret_cast<const __m128i*>(mask + i)),
                                              _mm_set1_epi8(-1));
    _mm512_storeu_ps(out + i, _mm512_mul_ps(_mm512_loadu_ps(x + i), _mm512_maskz_mov_ps(kept, s)));
  }
  apply_mask_scalar<float>(x + i, mask + i, out + i, n - i, scale);
}

GRASSAUDIT_AVX512_KERNEL void apply_mask_avx512(const c10::BFloat16* x, const uint8_t* mask, c10::BFloat16* out, int64_t n,
                                         float scale) {
  const __m512 s = _mm512_set1_ps(scale);
  const __m512i bias = _mm512_set1_epi32(0x7FFF), one = _mm512_set1_epi32(1), nan = _mm512_set1_epi32(0x7FC0);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __mmask16 kept = _mm_test_epi8_mask(_mm_loadu_si128(reinterpret_cast<const __m128i*>(mask + i)),
                                              _mm_set1_epi8(-1));
    const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i));
    const __m512 xf = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(raw), 16));
    const __m512 r = _mm512_mul_ps(xf, _mm512_maskz_mov_ps(kept, s));
    const __m512i u = _mm512_castps_si512(r);
    __m512i rounded = _mm512_srli_epi32(
        _mm512_add_epi32(u, _mm512_add_epi32(bias, _mm512_and_si512(_mm512_srli_epi32(u, 16), one))), 16);
    rounded = _mm512_mask_mov_epi32(rounded, _mm512_cmp_ps_mask(r, r, _CMP_UNORD_Q), nan);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), _mm512_cvtepi32_epi16(rounded));
  }
  apply_mask_scalar<c10::BFloat16>(x + i, mask + i, out + i, n - i, scale);
}

template <typename T, typename M = typename MulType<T>::type>
void apply_mask(const T* x, const uint8_t* mask, T* out, int64_t n, M scale,
                DropoutMaskKernel kernel = DropoutMaskKernel::kAuto) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, c10::BFloat16>) {
    if (kernel == DropoutMaskKernel::kAuto && cpu_runs_avx512_kernels()) return apply_mask_avx512(x, mask, out, n, scale);
  }
  apply_mask_scalar<T>(x, mask, out, n, scale);
}

// x [n] contiguous -> out [n], mask [n] (uint8, 1 = kept): out = x * (mask * scale).
template <typename T, typename M = typename MulType<T>::type>
void forward_kernel(const T* x, T* out, uint8_t* mask, int64_t n, uint64_t seed, uint64_t first, uint64_t threshold,
                    M scale) {
  at::parallel_for(0, n, kGrain, [&](int64_t i0, int64_t i1) {
    fill_mask(mask + i0, i1 - i0, seed, first + static_cast<uint64_t>(i0), threshold, DropoutMaskKernel::kAuto);
    apply_mask<T>(x + i0, mask + i0, out + i0, i1 - i0, scale);
  });
}

// grad_out [n], mask [n] -> grad_in [n] = grad_out * (mask * scale).
template <typename T, typename M = typename MulType<T>::type>
void backward_kernel(const T* g, const uint8_t* mask, T* grad_in, int64_t n, M scale) {
  at::parallel_for(0, n, kGrain,
                   [&](int64_t i0, int64_t i1) { apply_mask<T>(g + i0, mask + i0, grad_in + i0, i1 - i0, scale); });
}

struct HashedDropout : public torch::autograd::Function<HashedDropout> {
  // x: any shape (float32/float64/bf16, CPU) -> same shape.
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& input, double p, int64_t seed,
                            int64_t first_index) {
    RECORD_FUNCTION("grassaudit::hashed_dropout", std::vector<c10::IValue>());  // named in op profiles
    const auto x = input.contiguous();
    auto out = at::empty_like(x);
    auto mask = at::empty(x.sizes(), x.options().dtype(at::kByte));
    const double scale = 1.0 / (1.0 - p);
    const uint64_t threshold = dropout_threshold(p);
    AT_DISPATCH_FLOATING_TYPES_AND(at::kBFloat16, x.scalar_type(), "hashed_dropout", [&] {
      using mul_t = typename MulType<scalar_t>::type;
      forward_kernel<scalar_t>(x.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), mask.data_ptr<uint8_t>(), x.numel(),
                               static_cast<uint64_t>(seed), static_cast<uint64_t>(first_index), threshold,
                               static_cast<mul_t>(scale));
    });
    ctx->save_for_backward({mask});  // released by backward (saved_data would live as long as the graph)
    ctx->saved_data["scale"] = scale;
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    RECORD_FUNCTION("grassaudit::hashed_dropout_backward", std::vector<c10::IValue>());
    const auto mask = ctx->get_saved_variables()[0];
    const double scale = ctx->saved_data["scale"].toDouble();
    const auto g = grads[0].contiguous();
    at::Tensor grad_in;
    if (at::GradMode::is_enabled()) {
      // create_graph: ATen ops, so the gradient is itself differentiable.
      grad_in = g * mask.to(g.scalar_type()) * scale;
    } else {
      grad_in = at::empty_like(g);
      AT_DISPATCH_FLOATING_TYPES_AND(at::kBFloat16, g.scalar_type(), "hashed_dropout_backward", [&] {
        using mul_t = typename MulType<scalar_t>::type;
        backward_kernel<scalar_t>(g.data_ptr<scalar_t>(), mask.data_ptr<uint8_t>(), grad_in.data_ptr<scalar_t>(),
                                  g.numel(), static_cast<mul_t>(scale));
      });
    }
    return {grad_in, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

// ATen's Bernoulli noise (what at::dropout does), drawn for the global batch; the path for CUDA
// and other dtypes.
at::Tensor bernoulli_rows_dropout(const at::Tensor& x, double p, int64_t global, int64_t first, int64_t k) {
  auto sizes = x.sizes().vec();
  sizes[0] = global * k;
  auto noise = at::empty(sizes, x.options().memory_format(at::MemoryFormat::Contiguous));
  noise.bernoulli_(1 - p);
  noise.div_(1 - p);
  return x * noise.narrow(0, first * k, x.size(0));
}

}  // namespace

at::Tensor dropout_mask(int64_t n, double p, uint64_t seed, int64_t first_index, DropoutMaskKernel kernel) {
  auto mask = at::empty({n}, at::TensorOptions().dtype(at::kByte));
  fill_mask(mask.data_ptr<uint8_t>(), n, seed, static_cast<uint64_t>(first_index), dropout_threshold(p), kernel);
  return mask;
}

at::Tensor apply_dropout_mask(const at::Tensor& x, const at::Tensor& mask, double p, DropoutMaskKernel kernel) {
  TORCH_CHECK(hashed_kernel_applies(x) && mask.scalar_type() == at::kByte && mask.numel() == x.numel(),
              "apply_dropout_mask: CPU float32/float64/bf16 x and a uint8 mask of as many elements");
  const auto xc = x.contiguous();
  const auto mc = mask.contiguous();
  auto out = at::empty_like(xc);
  AT_DISPATCH_FLOATING_TYPES_AND(at::kBFloat16, xc.scalar_type(), "apply_dropout_mask", [&] {
    using mul_t = typename MulType<scalar_t>::type;
    apply_mask<scalar_t>(xc.data_ptr<scalar_t>(), mc.data_ptr<uint8_t>(), out.data_ptr<scalar_t>(), xc.numel(),
                         static_cast<mul_t>(1.0 / (1.0 - p)), kernel);
  });
  return out;
}

uint64_t dropout_threshold(double p) {
  if (!(p >= 0 && p <= 1)) throw std::invalid_argument(fmt::format("dropout rate {} is outside [0, 1]", p));
  return static_cast<uint64_t>(std::llround(p * 4294967296.0));  // p * 2^32; 2^32 at p = 1 (nothing kept)
}

DropoutRowsScope::DropoutRowsScope(int64_t global_rows, int64_t first, int64_t rows)
    : rows_(g_rows, {global_rows, first, rows}) {}

at::Tensor row_sharded_dropout(const at::Tensor& x, double p, bool train) {
  dropout_threshold(p);  // p outside [0, 1] throws, in eval too
  if (x.dim() == 0) return at::dropout(x, p, train);  // no rows to shard
  int64_t global = g_rows[0], first = g_rows[1], rows = g_rows[2];
  if (global == 0) {  // one process: the whole batch
    global = rows = x.size(0);
    first = 0;
  }
  if (rows <= 0 || x.size(0) % rows != 0)
    throw std::logic_error(fmt::format("row-sharded dropout: leading dimension {} is not a multiple of the {} rows "
                                       "of this rank",
                                       x.size(0), rows));
  if (p == 0 || !train || x.numel() == 0) return x;
  if (p == 1) return x * at::zeros({}, x.options());
  const int64_t k = x.size(0) / rows;
  if (!hashed_kernel_applies(x)) {
    if (first == 0 && rows == global) return at::dropout(x, p, train);
    return bernoulli_rows_dropout(x, p, global, first, k);
  }
  const int64_t per_row = x.numel() / x.size(0);  // elements per leading index
  const int64_t first_index = first * k * per_row;
  return HashedDropout::apply(x, p, static_cast<int64_t>(draw_seed()), first_index);
}

at::Tensor reference_row_dropout(const at::Tensor& x, double p, uint64_t seed, int64_t first_index) {
  TORCH_CHECK(x.device().is_cpu() && (x.scalar_type() == at::kFloat || x.scalar_type() == at::kDouble),
              "reference_row_dropout: CPU float32/float64 only");
  const uint64_t threshold = dropout_threshold(p);
  auto kept = at::empty({x.numel()}, x.options().dtype(at::kBool));
  auto kept_a = kept.accessor<bool, 1>();
  for (int64_t i = 0; i < x.numel(); ++i) kept_a[i] = keep(seed, static_cast<uint64_t>(first_index + i), threshold);
  // x * (1 / (1 - p)) in x's dtype where kept, as the kernel multiplies.
  return at::where(kept.reshape(x.sizes()), x * (1.0 / (1.0 - p)), at::zeros({}, x.options()));
}

}  // namespace grassaudit
