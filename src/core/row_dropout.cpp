#include "core/row_dropout.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#include <torch/csrc/autograd/custom_function.h>
#include <fmt/format.h>

#include <cmath>
#include <mutex>
#include <stdexcept>

namespace grassaudit {
namespace {
// {global_rows, first, rows}; global_rows == 0: no scope.
thread_local int64_t g_rows[3] = {0, 0, 0};

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

constexpr int64_t kGrain = 16384;  // elements per parallel task: hashing is ~1-2 ns an element

// x [n] contiguous -> out [n], mask [n] (uint8, 1 = kept). out = x * (mask * scale), as ATen's
// x * noise (so inf * dropped = NaN there too); the multiply loops are branch-free.
template <typename T, typename M = typename MulType<T>::type>
void forward_kernel(const T* x, T* out, uint8_t* mask, int64_t n, uint64_t seed, uint64_t first, uint64_t threshold,
                    M scale) {
  at::parallel_for(0, n, kGrain, [&](int64_t i0, int64_t i1) {
    uint64_t pair = ~uint64_t{0}, hash = 0;
    for (int64_t i = i0; i < i1; ++i) {
      const uint64_t index = first + static_cast<uint64_t>(i);
      if ((index >> 1) != pair) {
        pair = index >> 1;
        hash = splitmix64(seed, pair);
      }
      mask[i] = element_bits(hash, index) >= threshold;
    }
    for (int64_t i = i0; i < i1; ++i) out[i] = static_cast<T>(static_cast<M>(x[i]) * (static_cast<M>(mask[i]) * scale));
  });
}

// grad_out [n], mask [n] -> grad_in [n] = grad_out * (mask * scale).
template <typename T, typename M = typename MulType<T>::type>
void backward_kernel(const T* g, const uint8_t* mask, T* grad_in, int64_t n, M scale) {
  at::parallel_for(0, n, kGrain, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i)
      grad_in[i] = static_cast<T>(static_cast<M>(g[i]) * (static_cast<M>(mask[i]) * scale));
  });
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

uint64_t dropout_threshold(double p) {
  if (!(p >= 0 && p <= 1)) throw std::invalid_argument(fmt::format("dropout rate {} is outside [0, 1]", p));
  return static_cast<uint64_t>(std::llround(p * 4294967296.0));  // p * 2^32; 2^32 at p = 1 (nothing kept)
}

DropoutRowsScope::DropoutRowsScope(int64_t global_rows, int64_t first, int64_t rows) {
  for (int i = 0; i < 3; ++i) saved_[i] = g_rows[i];
  g_rows[0] = global_rows;
  g_rows[1] = first;
  g_rows[2] = rows;
}

DropoutRowsScope::~DropoutRowsScope() {
  for (int i = 0; i < 3; ++i) g_rows[i] = saved_[i];
}

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
