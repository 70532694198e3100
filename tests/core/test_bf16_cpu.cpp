// bf16 on CPU, exercised on any CPU (LibTorch emulates bf16 where the CPU has
// no native support, so this checks correctness, not speed): under AutocastScope(CPU, bf16) the
// fused head runs its GEMMs in bf16 (equal to an explicit bf16 formulation, different from
// float32), the Grassmann fast path and attention run and stay near float32, gradients reach every
// parameter in float32, dropout on bf16 keeps a float32 run's masks, and linear_rows is one bf16
// addmm under autocast and the module's own forward elsewhere.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "core/bf16_linear.h"
#include "core/fused_head.h"
#include "core/language_model.h"
#include "core/lm_loss.h"
#include "core/model_config.h"
#include "core/row_dropout.h"
#include "runtime/runtime.h"

using namespace grassaudit;

namespace {
ModelConfig tiny(const std::string& mixer) {
  ModelConfig c;
  c.mixer = mixer;
  c.vocab_size = 101;
  c.d_model = 32;
  c.rank = 6;
  c.layers = 2;
  c.max_len = 24;
  c.heads = 4;
  c.d_ff = 64;
  c.offsets = {1, 3};
  c.dropout = 0.1;
  return c;
}
double rel(const at::Tensor& a, const at::Tensor& b) {
  return (a.to(at::kDouble) - b.to(at::kDouble)).abs().max().item<double>() /
         std::max(b.to(at::kDouble).abs().max().item<double>(), 1e-30);
}
}  // namespace

TEST(Bf16Cpu, FusedHeadRunsItsGemmsInBf16) {
  at::manual_seed(1);
  auto h = at::randn({40, 32}).requires_grad_(true);
  auto w = (at::randn({101, 32}) * 0.3).requires_grad_(true);
  auto t = at::randint(0, 101, {40}, at::kLong);
  at::Tensor fused;
  {
    AutocastScope scope(c10::DeviceType::CPU, at::kBFloat16);
    EXPECT_TRUE(cpu_bf16_autocast());
    fused = fused_head_loss(h, w, t, /*chunk=*/16);
  }
  EXPECT_FALSE(cpu_bf16_autocast());
  EXPECT_EQ(fused.scalar_type(), at::kFloat);
  // The same loss with the logits GEMM explicitly in bf16, the softmax in float32.
  auto hb = h.detach().clone().requires_grad_(true), wb = w.detach().clone().requires_grad_(true);
  auto logits = at::mm(hb.to(at::kBFloat16), wb.to(at::kBFloat16).t()).to(at::kFloat);
  auto ref = at::cross_entropy_loss(logits, t);
  EXPECT_LT(rel(fused, ref), 1e-5);
  const auto fp32 = fused_head_loss(h.detach(), w.detach(), t, 16);
  EXPECT_GT((fused - fp32).abs().item<double>(), 0.0);  // bf16 really in use
  EXPECT_LT(rel(fused, fp32), 1e-2);
  fused.backward();
  ref.backward();
  EXPECT_LT(rel(h.grad(), hb.grad()), 2e-2);
  EXPECT_LT(rel(w.grad(), wb.grad()), 2e-2);
  EXPECT_EQ(w.grad().scalar_type(), at::kFloat);
}

TEST(Bf16Cpu, TrainingLossOfEveryCausalMixerStaysNearFloat32AndGradientsAreFloat32) {
  for (const std::string mixer : {"past", "attention"})
    for (auto impl : {LossImpl::kFused, LossImpl::kMaterialized}) {
      SCOPED_TRACE(mixer + (impl == LossImpl::kFused ? " fused" : " materialized"));
      at::manual_seed(3);
      LanguageModel model(tiny(mixer));
      model->train();
      auto x = at::randint(0, 101, {4, 24}, at::kLong), y = at::randint(0, 101, {4, 24}, at::kLong);
      at::manual_seed(9);
      const double l32 = lm_loss(model, x, y, impl).item<double>();
      at::manual_seed(9);
      at::Tensor loss;
      {
        AutocastScope scope(c10::DeviceType::CPU, at::kBFloat16);
        loss = lm_loss(model, x, y, impl);
      }
      ASSERT_TRUE(std::isfinite(loss.item<double>()));
      EXPECT_NE(loss.item<double>(), l32);
      EXPECT_LT(std::abs(loss.item<double>() - l32) / l32, 3e-2);
      loss.backward();
      for (const auto& p : model->named_parameters()) {
        ASSERT_TRUE(p.value().grad().defined()) << p.key();
        EXPECT_EQ(p.value().grad().scalar_type(), at::kFloat) << p.key();
        EXPECT_TRUE(at::isfinite(p.value().grad()).all().item<bool>()) << p.key();
      }
    }
}

TEST(Bf16Cpu, DropoutOnBf16KeepsTheFloat32Masks) {
  auto x = at::randn({8, 64});
  at::manual_seed(21);
  const auto y32 = row_sharded_dropout(x, 0.3, true);
  at::manual_seed(21);
  const auto y16 = row_sharded_dropout(x.to(at::kBFloat16), 0.3, true);
  EXPECT_EQ(y16.scalar_type(), at::kBFloat16);
  EXPECT_TRUE(at::equal(y32.eq(0), y16.to(at::kFloat).eq(0)));
  EXPECT_LT(rel(y16, y32), 1e-2);
}

TEST(Bf16Cpu, LinearRowsIsOneBf16AddmmUnderAutocastAndTheModuleElsewhere) {
  at::manual_seed(5);
  torch::nn::Linear lin(16, 24);
  const auto x = at::randn({3, 5, 16});
  // Outside autocast: the module's own forward, bit for bit (float32 arithmetic untouched).
  EXPECT_TRUE(at::equal(linear_rows(*lin, x), lin->forward(x)));
  at::Tensor y;
  {
    AutocastScope scope(c10::DeviceType::CPU, at::kBFloat16);
    y = linear_rows(*lin, x);
  }
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{3, 5, 24}));
  EXPECT_EQ(y.scalar_type(), at::kBFloat16);
  const auto want = at::addmm(lin->bias.to(at::kBFloat16), x.reshape({15, 16}).to(at::kBFloat16),
                              lin->weight.to(at::kBFloat16).t());
  EXPECT_TRUE(at::equal(y.reshape({15, 24}), want));
  y.to(at::kFloat).sum().backward();
  EXPECT_EQ(lin->weight.grad().scalar_type(), at::kFloat);
  EXPECT_EQ(lin->bias.grad().scalar_type(), at::kFloat);
  EXPECT_LT(rel(lin->bias.grad(), at::full({24}, 15.0)), 1e-6);  // 15 rows, each d(sum)/d(bias) = 1
}

// Same seed, same thread count: the same bf16 loss and gradients, bit for bit (the head's row
// kernel and dropout are row-parallel with fixed sums; the GEMMs' blocking depends on the thread
// count only).
TEST(Bf16Cpu, ABf16StepRepeatsBitForBit) {
  for (const std::string mixer : {"past", "attention"}) {
    SCOPED_TRACE(mixer);
    std::vector<at::Tensor> runs[2];
    for (auto& grads : runs) {
      at::manual_seed(11);
      LanguageModel model(tiny(mixer));
      model->train();
      auto x = at::randint(0, 101, {4, 24}, at::kLong), y = at::randint(0, 101, {4, 24}, at::kLong);
      at::Tensor loss;
      {
        AutocastScope scope(c10::DeviceType::CPU, at::kBFloat16);
        loss = lm_loss(model, x, y, LossImpl::kFused);
      }
      loss.backward();
      grads.push_back(loss.detach());
      for (const auto& p : model->parameters()) grads.push_back(p.grad());
    }
    ASSERT_EQ(runs[0].size(), runs[1].size());
    for (size_t i = 0; i < runs[0].size(); ++i) EXPECT_TRUE(at::equal(runs[0][i], runs[1][i])) << "tensor " << i;
  }
}
