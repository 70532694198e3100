// The bf16 head's row kernel (core/bf16_xent_rows.h) against the float32 ATen reference on the
// same bf16 logits: losses to 2e-6 log V absolute (float32 sums of up to 30,522 terms), gradients to
// one bf16 rounding (2^-8 relative) plus float32's error; the vectorised and the scalar kernel to the same bounds
// of each other; bits independent of the thread count. Then the whole bf16 fused head under CPU
// bf16 autocast against the plain float32 reference (at::cross_entropy_loss over float32 logits):
// loss to 1e-2 relative, gradients of hidden states and weight to 4e-2 of their scale, ignored
// targets included.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <string>

#include "core/bf16_xent_rows.h"
#include "core/fused_head.h"
#include "runtime/runtime.h"

using namespace grassaudit;

namespace {

// Logits [n, V] in bf16 spread over [-spread, spread] plus a per-row offset, so rows differ in
// their maximum and some terms underflow exp in float32.
at::Tensor random_logits(int64_t n, int64_t V, double spread, uint64_t seed) {
  at::manual_seed(seed);
  auto z = (at::rand({n, V}) * 2 - 1) * spread + at::randn({n, 1}) * 10;
  return z.to(at::kBFloat16).contiguous();
}

struct Worst {
  double loss = 0, grad = 0;
};

// Kernel result vs reference on one input: loss |diff|, and the largest gradient error beyond one
// bf16 rounding of the reference and float32's own error, max(|g - ref| - (2^-8 + 1e-5) |ref|, 0)
// (the target's entry c e_t / s - c cancels: its float32 error is relative to c, not to it).
Worst compare(const at::Tensor& z0, const at::Tensor& t, const at::Tensor& coef, Bf16XentKernel kernel) {
  auto z = z0.clone();
  const auto loss = bf16_xent_rows(z, t, coef, kernel);
  const auto ref = bf16_xent_rows_reference(z0, t, coef);
  Worst w;
  w.loss = (loss - ref.loss).abs().max().item<double>();
  if (coef.defined()) {
    const auto g = z.to(at::kFloat);
    w.grad = ((g - ref.grad).abs() - ref.grad.abs() * (std::ldexp(1.0, -8) + 1e-5)).clamp_min(0).max().item<double>();
  }
  return w;
}

}  // namespace

TEST(Bf16XentRows, MatchesTheFloat32ReferenceOnBothKernels) {
  struct Case {
    int64_t n, V;
    double spread;
  };
  // V below, at and above one 16-wide vector, a tail of every kind, the paper's vocabulary.
  for (const Case c : {Case{3, 1, 1.0}, Case{5, 15, 3.0}, Case{4, 16, 3.0}, Case{7, 33, 8.0}, Case{6, 4099, 60.0},
                       Case{2, 30522, 5.0}})
    for (const auto kernel : {Bf16XentKernel::kAuto, Bf16XentKernel::kScalar}) {
      SCOPED_TRACE("V " + std::to_string(c.V) + (kernel == Bf16XentKernel::kAuto ? " auto" : " scalar"));
      const auto z = random_logits(c.n, c.V, c.spread, 7 + c.V);
      const auto t = at::randint(0, c.V, {c.n}, at::kLong);
      const auto coef = at::rand({c.n}) * 0.1;
      const Worst w = compare(z, t, coef, kernel);
      std::cout << "V " << c.V << (kernel == Bf16XentKernel::kAuto ? " auto" : " scalar") << ": loss |diff| " << w.loss
                << ", gradient beyond rounding " << w.grad << "\n";
      EXPECT_LT(w.loss, 2e-6 * std::max(1.0, std::log(static_cast<double>(c.V))));
      EXPECT_LT(w.grad, 1e-6 * coef.max().item<double>());
      const Worst loss_only = compare(z, t, at::Tensor(), kernel);
      EXPECT_EQ(loss_only.loss, w.loss);  // the loss does not depend on whether the gradient is written
    }
}

TEST(Bf16XentRows, LossOnlyLeavesTheLogitsAndZeroCoefWritesZeros) {
  const auto z0 = random_logits(4, 100, 4.0, 3);
  const auto t = at::randint(0, 100, {4}, at::kLong);
  auto z = z0.clone();
  bf16_xent_rows(z, t, at::Tensor());
  EXPECT_TRUE(at::equal(z, z0));
  bf16_xent_rows(z, t, at::zeros({4}));
  EXPECT_EQ(z.to(at::kFloat).abs().max().item<float>(), 0.0f);
}

TEST(Bf16XentRows, GradientRowsSumToNearZeroAndTargetIsNegative) {
  // softmax - onehot sums to 0 per row; each bf16 rounding moves a term by <= 2^-9 of it.
  const auto z0 = random_logits(8, 513, 6.0, 11);
  const auto t = at::randint(0, 513, {8}, at::kLong);
  auto z = z0.clone();
  bf16_xent_rows(z, t, at::ones({8}));
  const auto g = z.to(at::kDouble);
  EXPECT_LT(g.sum(1).abs().max().item<double>(), 2.0 * std::ldexp(1.0, -9));
  EXPECT_TRUE(g.gather(1, t.unsqueeze(1)).lt(0).all().item<bool>());
}

TEST(Bf16XentRows, BitsDoNotDependOnTheThreadCount) {
  const auto z0 = random_logits(37, 3001, 9.0, 5);
  const auto t = at::randint(0, 3001, {37}, at::kLong);
  const auto coef = at::rand({37});
  const int saved = at::get_num_threads();
  at::set_num_threads(1);
  auto z1 = z0.clone();
  const auto l1 = bf16_xent_rows(z1, t, coef);
  at::set_num_threads(2);
  auto z2 = z0.clone();
  const auto l2 = bf16_xent_rows(z2, t, coef);
  at::set_num_threads(saved);
  EXPECT_TRUE(at::equal(l1, l2));
  EXPECT_TRUE(at::equal(z1, z2));
}

TEST(Bf16XentRows, RejectsBadInputs) {
  auto z = random_logits(2, 10, 1.0, 1);
  EXPECT_THROW(bf16_xent_rows(z, at::tensor({0, 10}, at::kLong), at::Tensor()), c10::Error);
  EXPECT_THROW(bf16_xent_rows(z.to(at::kFloat), at::tensor({0, 1}, at::kLong), at::Tensor()), c10::Error);
  EXPECT_THROW(bf16_xent_rows(z, at::tensor({0, 1}, at::kLong), at::ones({2}, at::kDouble)), c10::Error);
}

// The bf16 fused head (under CPU bf16 autocast) against the float32 reference head: what bf16
// training optimises is the float32 loss to within bf16's rounding of the logits and gradients.
TEST(Bf16XentRows, Bf16FusedHeadStaysNearTheFloat32ReferenceForwardAndBackward) {
  at::manual_seed(4);
  const int64_t N = 300, d = 64, V = 2000;
  const auto h0 = at::randn({N, d});
  const auto w0 = at::randn({V, d}) * 0.15;  // logits of a few units, as in a trained model
  auto t = at::randint(0, V, {N}, at::kLong);
  t.masked_fill_(at::rand({N}).lt(0.2), kIgnoreIndex);
  auto h = h0.clone().requires_grad_(true), w = w0.clone().requires_grad_(true);
  at::Tensor loss;
  {
    AutocastScope scope(c10::DeviceType::CPU, at::kBFloat16);
    loss = fused_head_loss(h, w, t, /*chunk=*/128);
  }
  loss.backward();
  auto hr = h0.clone().requires_grad_(true), wr = w0.clone().requires_grad_(true);
  auto ref = reference_head_loss(hr, wr, t);
  ref.backward();
  auto rel = [](const at::Tensor& a, const at::Tensor& b) {
    return (a - b).abs().max().item<double>() / b.abs().max().item<double>();
  };
  EXPECT_EQ(loss.scalar_type(), at::kFloat);
  EXPECT_LT(std::abs(loss.item<double>() - ref.item<double>()) / ref.item<double>(), 1e-2);
  EXPECT_NE(loss.item<double>(), ref.item<double>());  // the bf16 path is the one measured
  EXPECT_LT(rel(h.grad(), hr.grad()), 4e-2);
  EXPECT_LT(rel(w.grad(), wr.grad()), 4e-2);
  // Ignored rows get no gradient.
  const auto ignored = t.eq(kIgnoreIndex);
  EXPECT_EQ(h.grad().index({ignored}).abs().max().item<float>(), 0.0f);
}

TEST(Bf16XentRows, Bf16FusedHeadWithEveryTargetIgnoredIsNanWithZeroGradients) {
  auto h = at::randn({6, 8}).requires_grad_(true), w = at::randn({20, 8}).requires_grad_(true);
  const auto t = at::full({6}, kIgnoreIndex, at::kLong);
  at::Tensor loss;
  {
    AutocastScope scope(c10::DeviceType::CPU, at::kBFloat16);
    loss = fused_head_loss(h, w, t, 4);
  }
  EXPECT_TRUE(std::isnan(loss.item<double>()));
  loss.backward();
  EXPECT_EQ(h.grad().abs().max().item<float>(), 0.0f);
  EXPECT_EQ(w.grad().abs().max().item<float>(), 0.0f);
}
