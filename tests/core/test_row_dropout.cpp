// Row-sharded dropout (core/row_dropout.h): the CPU kernel against its plain reference, shards of
// a global batch against the one-process output bit for bit (and the generator left in the same
// state, so the next step's masks agree too), independence from the thread count, the keep rate
// and pair statistics of the masks, backward, bf16 through the same kernel, and ATen's Bernoulli
// path for other dtypes. Also dist::row_share's split.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/autograd.h>

#include <cmath>

#include "runtime/distributed.h"
#include "core/row_dropout.h"

namespace grassaudit {
namespace {

at::Tensor generator_state() { return at::detail::getDefaultCPUGenerator().get_state(); }

// The seed one dropout call draws after manual_seed(s): the first random64() of that state.
uint64_t first_seed_after(uint64_t s) {
  at::manual_seed(s);
  auto gen = at::detail::getDefaultCPUGenerator();
  return at::check_generator<at::CPUGeneratorImpl>(gen)->random64();
}

// One "step" of a global batch x: [G, ...] split into `world` shards, each shard drawing from the
// same starting generator state (as every rank does).
void expect_shards_match(const at::Tensor& x, double p, int world) {
  const int64_t G = x.size(0);
  at::manual_seed(42);
  const at::Tensor want = row_sharded_dropout(x, p, /*train=*/true);
  const at::Tensor state_after = generator_state();
  for (int r = 0; r < world; ++r) {
    const dist::RowShare s = dist::row_share(G, r, world);
    if (s.count == 0) continue;
    at::manual_seed(42);
    at::Tensor got;
    {
      const DropoutRowsScope rows(G, s.begin, s.count);
      got = row_sharded_dropout(x.narrow(0, s.begin, s.count), p, /*train=*/true);
    }
    EXPECT_TRUE(at::equal(got, want.narrow(0, s.begin, s.count)))
        << x.scalar_type() << " world " << world << " rank " << r;
    EXPECT_TRUE(at::equal(generator_state(), state_after)) << "world " << world << " rank " << r;
  }
}

TEST(RowDropout, ShardsEqualTheRowsOfOneProcessDropout) {
  at::manual_seed(1);
  for (auto dtype : {at::kFloat, at::kDouble, at::kBFloat16}) {  // bfloat16: the hashed kernel, in float32
    const at::Tensor lm = at::randn({6, 16, 8}).to(dtype);       // [B, L, d]
    const at::Tensor heads = at::randn({6 * 2, 5, 5}).to(dtype);  // [B*H, L, L] (attention probabilities)
    for (int world : {1, 2, 3, 4, 6})
      for (double p : {0.1, 0.5}) {
        expect_shards_match(lm, p, world);
        expect_shards_match(heads, p, world);
      }
  }
}

TEST(RowDropout, KernelEqualsTheReferenceInBothDtypesAndAnyLayout) {
  for (auto dtype : {at::kFloat, at::kDouble}) {
    const at::Tensor x = at::randn({5, 7, 9}, at::TensorOptions().dtype(dtype));
    const at::Tensor strided = x.transpose(1, 2);  // not contiguous: the mask follows the logical order
    for (double p : {0.1, 0.37, 0.9}) {
      for (const auto& in : {x, strided}) {
        at::manual_seed(3);
        const at::Tensor got = row_sharded_dropout(in, p, true);
        const at::Tensor want = reference_row_dropout(in, p, first_seed_after(3), 0);
        EXPECT_TRUE(at::equal(got, want)) << dtype << " p " << p;
      }
    }
  }
  // Inside a scope, rank rows [2, 4) of 6 start at global element 2 * (7 * 9).
  const at::Tensor x = at::randn({2, 7, 9});
  at::manual_seed(5);
  at::Tensor got;
  {
    const DropoutRowsScope rows(6, 2, 2);
    got = row_sharded_dropout(x, 0.2, true);
  }
  EXPECT_TRUE(at::equal(got, reference_row_dropout(x, 0.2, first_seed_after(5), 2 * 7 * 9)));
}

// The parallel kernel (several tasks of kGrain elements, an odd element offset, odd rows) against
// the one-element-at-a-time reference.
TEST(RowDropout, ParallelTasksAndOddOffsetsEqualTheReference) {
  const int threads = at::get_num_threads();
  at::set_num_threads(3);
  ASSERT_EQ(at::get_num_threads(), 3);
  const at::Tensor x = at::randn({7, 5, 999});  // 34,965 elements, 4,995 per row
  at::manual_seed(13);
  at::Tensor got;
  {
    const DropoutRowsScope rows(9, 1, 7);  // rows 1..7 of 9: the first element is global 4,995 (odd)
    got = row_sharded_dropout(x, 0.25, true);
  }
  at::set_num_threads(threads);
  EXPECT_TRUE(at::equal(got, reference_row_dropout(x, 0.25, first_seed_after(13), 4995)));
}

// Pinned masks, computed independently (Python, splitmix64 as published): a changed constant,
// half or threshold would change the committed runs' masks and break resuming their checkpoints.
TEST(RowDropout, TheMaskRuleIsPinned) {
  const auto ones = at::ones({16}, at::TensorOptions().dtype(at::kDouble));
  const at::Tensor half = reference_row_dropout(ones, 0.5, 12345, 0).ne(0).to(at::kLong);
  EXPECT_TRUE(at::equal(half, at::tensor({1, 0, 1, 0, 1, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0}, at::kLong)));
  const at::Tensor tenth = reference_row_dropout(ones, 0.1, 987654321, 5).ne(0).to(at::kLong);
  EXPECT_TRUE(at::equal(tenth, at::tensor({1, 0, 1, 0, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1}, at::kLong)));
}

TEST(RowDropout, MasksDoNotDependOnTheThreadCount) {
  const int threads = at::get_num_threads();
  const at::Tensor x = at::randn({64, 128, 32});  // many parallel tasks
  at::set_num_threads(1);
  ASSERT_EQ(at::get_num_threads(), 1);
  at::manual_seed(9);
  const at::Tensor one = row_sharded_dropout(x, 0.1, true);
  at::set_num_threads(std::max(2, threads));
  ASSERT_EQ(at::get_num_threads(), std::max(2, threads));
  at::manual_seed(9);
  const at::Tensor many = row_sharded_dropout(x, 0.1, true);
  at::set_num_threads(threads);
  EXPECT_TRUE(at::equal(one, many));
}

// 2^20 elements: the kept fraction and the fraction of adjacent both-kept pairs within 5 standard
// errors of (1 - p) and (1 - p)^2, and the mean of dropout(ones) near 1 (the 1 / (1 - p) scale).
TEST(RowDropout, KeepRateAndAdjacentPairsMatchIndependentBernoulli) {
  const int64_t n = 1 << 20;
  const at::Tensor ones = at::ones({n / 1024, 1024}, at::TensorOptions().dtype(at::kDouble));
  for (double p : {0.1, 0.5}) {
    at::manual_seed(11);
    const at::Tensor y = row_sharded_dropout(ones, p, true).reshape({-1});
    const at::Tensor kept = y.ne(0).to(at::kDouble);
    const double q = 1 - p;
    const double rate = kept.mean().item<double>();
    EXPECT_NEAR(rate, q, 5 * std::sqrt(p * q / n)) << "p " << p;
    const double pairs = (kept.narrow(0, 0, n - 1) * kept.narrow(0, 1, n - 1)).mean().item<double>();
    EXPECT_NEAR(pairs, q * q, 5 * std::sqrt(q * q * (1 - q * q) / n) * 2) << "p " << p;  // x2: overlapping pairs
    EXPECT_NEAR(y.mean().item<double>(), 1.0, 5 * std::sqrt(p / q / n)) << "p " << p;
    EXPECT_TRUE(at::equal(y.masked_select(y.ne(0)), at::full({kept.sum().item<int64_t>()}, 1.0 / q, y.options())));
  }
}

TEST(RowDropout, BackwardMultipliesByTheSavedMaskAndCreateGraphAgrees) {
  at::manual_seed(2);
  const at::Tensor x0 = at::rand({4, 6, 5}, at::TensorOptions().dtype(at::kDouble)) + 1;  // no zeros
  for (bool create_graph : {false, true}) {
    // With create_graph the gradient must be differentiable in the incoming gradient g.
    const at::Tensor g = at::randn_like(x0).requires_grad_(create_graph);
    const at::Tensor x = x0.clone().requires_grad_(true);
    at::manual_seed(21);
    const at::Tensor y = row_sharded_dropout(x, 0.3, true);
    const auto grads = torch::autograd::grad({y}, {x}, {g}, /*retain_graph=*/true, create_graph);
    const at::Tensor want = g.detach() * y.detach().ne(0).to(at::kDouble) * (1.0 / 0.7);
    EXPECT_TRUE(at::allclose(grads[0], want, 1e-15, 0)) << "create_graph " << create_graph;
    if (create_graph) EXPECT_TRUE(grads[0].requires_grad());
  }
}

// bf16 (CPU autocast's activations) runs the hashed kernel itself, multiplying in float32 and
// rounding once: the bits of the float32 kernel on the widened input, cast back, forward and
// backward (what the bf16 path computed before through two casts each way).
TEST(RowDropout, Bf16EqualsTheFloat32KernelRoundedOnceForwardAndBackward) {
  const at::Tensor x32 = at::randn({4, 33, 17});
  const at::Tensor x16 = x32.to(at::kBFloat16);
  const at::Tensor upstream = at::randn({4, 33, 17}).to(at::kBFloat16);
  at::manual_seed(17);
  auto a = x16.to(at::kFloat).requires_grad_(true);
  const at::Tensor y32 = row_sharded_dropout(a, 0.3, true);
  y32.backward(upstream.to(at::kFloat));
  at::manual_seed(17);
  auto b = x16.clone().requires_grad_(true);
  const at::Tensor y16 = row_sharded_dropout(b, 0.3, true);
  y16.backward(upstream);
  EXPECT_EQ(y16.scalar_type(), at::kBFloat16);
  EXPECT_TRUE(at::equal(y16, y32.to(at::kBFloat16)));
  EXPECT_EQ(b.grad().scalar_type(), at::kBFloat16);
  EXPECT_TRUE(at::equal(b.grad(), a.grad().to(at::kBFloat16)));
  EXPECT_GT(y16.eq(0).sum().item<int64_t>(), 0);
}

TEST(RowDropout, CallsDrawNewMasksAndASeedRepeatsThem) {
  const at::Tensor x = at::ones({8, 64});
  at::manual_seed(4);
  const at::Tensor a = row_sharded_dropout(x, 0.5, true);
  const at::Tensor b = row_sharded_dropout(x, 0.5, true);
  at::manual_seed(4);
  const at::Tensor a2 = row_sharded_dropout(x, 0.5, true);
  EXPECT_FALSE(at::equal(a, b));
  EXPECT_TRUE(at::equal(a, a2));
}

TEST(RowDropout, EvalAndZeroRateAreIdentityOneDropsAllAndBadRowsThrow) {
  const at::Tensor x = at::randn({4, 3});
  EXPECT_TRUE(at::equal(row_sharded_dropout(x, 0.3, /*train=*/false), x));
  EXPECT_TRUE(at::equal(row_sharded_dropout(x, 0.0, true), x));
  EXPECT_TRUE(at::equal(row_sharded_dropout(x, 1.0, true), at::zeros_like(x)));
  EXPECT_THROW(dropout_threshold(1.5), std::invalid_argument);
  EXPECT_THROW(row_sharded_dropout(x, -0.1, /*train=*/false), std::invalid_argument);  // checked in eval too
  const at::Tensor scalar = at::ones({});
  EXPECT_TRUE(at::equal(row_sharded_dropout(scalar, 0.3, false), scalar));  // 0-dim: no rows, ATen's rule
  EXPECT_EQ(dropout_threshold(0.5), uint64_t{1} << 31);
  const DropoutRowsScope rows(8, 4, 4);
  EXPECT_TRUE(at::equal(row_sharded_dropout(x, 0.3, /*train=*/false), x));
  EXPECT_THROW(row_sharded_dropout(at::randn({3, 2}), 0.3, true), std::logic_error);  // 3 is not a multiple of 4
}

TEST(RowShare, ContiguousCoversEveryRowOnceRankZeroFirst) {
  for (int world = 1; world <= 5; ++world)
    for (int64_t rows = 0; rows <= 13; ++rows) {
      int64_t next = 0;
      for (int r = 0; r < world; ++r) {
        const dist::RowShare s = dist::row_share(rows, r, world);
        EXPECT_EQ(s.begin, next);
        EXPECT_GE(s.count, rows / world);
        EXPECT_LE(s.count, rows / world + 1);
        next += s.count;
      }
      EXPECT_EQ(next, rows);
      if (rows > 0) {
        EXPECT_GT(dist::row_share(rows, 0, world).count, 0);
      }
    }
  EXPECT_FALSE(dist::active());  // no env:// variables in a test: a world of one
  EXPECT_EQ(dist::world_size(), 1);
}


// The mask pass, AVX-512 (16 elements per step where the CPU has it) against one element at a
// time: every length around the 16-element steps, even and odd first indices, indices past 2^32,
// and a threshold of 2^32 (p within 2^-33 of 1: nothing kept, the scalar path).
TEST(RowDropout, SimdMaskEqualsTheScalarMask) {
  for (double p : {0.1, 0.5, 0.9, 1.0 - 1e-11})
    for (int64_t first : {int64_t{0}, int64_t{1}, int64_t{2}, int64_t{15}, int64_t{17}, (int64_t{1} << 33) + 3})
      for (int64_t n : {0, 1, 2, 15, 16, 17, 31, 32, 33, 47, 1000, 16385}) {
        const uint64_t seed = 0x1234567890abcdefULL + static_cast<uint64_t>(n);
        const at::Tensor simd = dropout_mask(n, p, seed, first, DropoutMaskKernel::kAuto);
        const at::Tensor scalar = dropout_mask(n, p, seed, first, DropoutMaskKernel::kScalar);
        ASSERT_TRUE(at::equal(simd, scalar)) << "p " << p << " first " << first << " n " << n;
      }
  // The scalar mask is the reference rule.
  const auto ones = at::ones({999}, at::TensorOptions().dtype(at::kDouble));
  EXPECT_TRUE(at::equal(dropout_mask(999, 0.3, 77, 5, DropoutMaskKernel::kAuto).to(at::kDouble),
                        reference_row_dropout(ones, 0.3, 77, 5).ne(0).to(at::kDouble)));
  EXPECT_EQ(dropout_mask(64, 1.0 - 1e-11, 3, 0, DropoutMaskKernel::kAuto).sum().item<int64_t>(), 0);
}

// The multiply pass, AVX-512 against one element at a time, bit for bit: infinities and NaN (kept
// or dropped: inf * 0 is NaN), signed zeros, subnormals, and for bf16 the float32 products that
// round to nearest-even at a tie.
TEST(RowDropout, SimdMultiplyEqualsTheScalarMultiply) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> special{inf, -inf, nan, -0.0f, 0.0f, 1e-40f, -1e-40f, 3.0e38f, 1.0f, -2.5f};
  for (uint32_t low : {0x8000u, 0x18000u, 0x7FFFu, 0x8001u}) {  // ties to even, just below / above
    const uint32_t bits = 0x3F800000u + low;
    float f;
    std::memcpy(&f, &bits, sizeof f);
    special.push_back(f);
  }
  at::Tensor x = at::randn({1000});
  for (size_t i = 0; i < special.size(); ++i) x[static_cast<int64_t>(i * 37)] = special[i];
  for (double p : {0.1, 0.5}) {
    const at::Tensor mask = dropout_mask(x.numel(), p, 99, 0, DropoutMaskKernel::kScalar);
    for (auto dtype : {at::kFloat, at::kBFloat16}) {
      // bf16: the products of float32 inputs (exact in bf16 or not) round once.
      const at::Tensor in = dtype == at::kFloat ? x : x.to(at::kBFloat16);
      const at::Tensor simd = apply_dropout_mask(in, mask, p, DropoutMaskKernel::kAuto);
      const at::Tensor scalar = apply_dropout_mask(in, mask, p, DropoutMaskKernel::kScalar);
      const auto as_bits = dtype == at::kFloat ? at::kInt : at::kShort;
      EXPECT_TRUE(at::equal(simd.view(as_bits), scalar.view(as_bits))) << dtype << " p " << p;
    }
  }
}

}  // namespace
}  // namespace grassaudit
