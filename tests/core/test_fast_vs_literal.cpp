// The fast Grassmann path (one projection per token, Lagrange norms) equals the literal
// per-offset reference: outputs and parameter gradients, float32 <= 1e-5, float64 <= 1e-12.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/nn/module.h>

#include <random>

#include "core/grassmann_mixer.h"
#include "core/language_model.h"

using namespace grassaudit;

namespace {

struct Diff {
  double out = 0, grad = 0;
};

// Runs fast and literal on the same module, same input, same upstream gradient.
Diff compare_paths(const GrassmannOptions& o, int64_t B, int64_t L, at::ScalarType dtype, uint64_t seed) {
  at::manual_seed(seed);
  auto mixer = std::make_shared<GrassmannMixerImpl>(o);
  mixer->to(dtype);
  mixer->eval();  // dropout off: the two paths must see the same function
  auto h = at::randn({B, L, o.d_model}, at::TensorOptions().dtype(dtype));
  auto upstream = at::randn({B, L, o.d_model}, at::TensorOptions().dtype(dtype));
  auto run = [&](bool literal) {
    mixer->zero_grad(/*set_to_none=*/false);
    auto y = literal ? mixer->forward_literal(h) : mixer->forward_fast(h);
    // Per-token mean, as a training loss is: gradients at the scale training sees.
    ((y * upstream).sum() / static_cast<double>(B * L)).backward();
    std::vector<at::Tensor> grads;
    for (auto& p : mixer->parameters()) grads.push_back(p.grad().clone());
    return std::make_pair(y.detach(), grads);
  };
  auto [y_fast, g_fast] = run(false);
  auto [y_lit, g_lit] = run(true);
  Diff d;
  d.out = (y_fast - y_lit).abs().max().item<double>();
  for (size_t i = 0; i < g_fast.size(); ++i)
    d.grad = std::max(d.grad, (g_fast[i] - g_lit[i]).abs().max().item<double>());
  return d;
}

}  // namespace

TEST(FastVsLiteral, RandomShapesBothDirectionsBothPrecisions) {
  std::mt19937 rng(1234);
  double worst32_out = 0, worst32_grad = 0, worst64_out = 0, worst64_grad = 0;
  for (int trial = 0; trial < 40; ++trial) {
    GrassmannOptions o;
    o.d_model = std::uniform_int_distribution<int>(4, 48)(rng);
    o.rank = std::uniform_int_distribution<int>(2, 12)(rng);
    o.direction = trial % 2 ? PairDirection::kFuture : PairDirection::kPast;
    const int64_t L = std::uniform_int_distribution<int>(1, 24)(rng);
    // "all" mode: several offsets, some >= L (sequences shorter than the largest offset).
    int n_off = trial % 3 == 0 ? 1 : std::uniform_int_distribution<int>(2, 6)(rng);
    o.offsets.clear();
    for (int k = 0; k < n_off; ++k) o.offsets.push_back(std::uniform_int_distribution<int>(1, 20)(rng));
    o.dropout = 0.1;
    const int64_t B = std::uniform_int_distribution<int>(1, 3)(rng);
    auto d64 = compare_paths(o, B, L, at::kDouble, 100 + trial);
    // p / |p| has condition number ~ 1/sin(angle of the pair). For r = 2 or 3, random pairs are
    // near-parallel often enough that float32 rounding in EITHER path exceeds 1e-5 (measured:
    // up to 2e-2 in gradients at r = 2), so float32 is held to 1e-5 from r = 4 up, and the low
    // ranks are covered by the float64 comparison at 1e-12.
    GrassmannOptions o32 = o;
    o32.rank = std::max<int64_t>(o.rank, 4);
    auto d32 = compare_paths(o32, B, L, at::kFloat, 100 + trial);
    worst32_out = std::max(worst32_out, d32.out);
    worst32_grad = std::max(worst32_grad, d32.grad);
    worst64_out = std::max(worst64_out, d64.out);
    worst64_grad = std::max(worst64_grad, d64.grad);
    EXPECT_LE(d32.out, 1e-5) << "trial " << trial;
    EXPECT_LE(d32.grad, 1e-5) << "trial " << trial;
    EXPECT_LE(d64.out, 1e-12) << "trial " << trial;
    EXPECT_LE(d64.grad, 1e-12) << "trial " << trial;
  }
  std::printf("fast vs literal max |diff|: float32 out %.3g grad %.3g; float64 out %.3g grad %.3g\n",
              worst32_out, worst32_grad, worst64_out, worst64_grad);
}

TEST(FastVsLiteral, PaperSizesFloat32) {
  for (auto dir : {PairDirection::kFuture, PairDirection::kPast}) {
    GrassmannOptions o;
    o.d_model = 256;
    o.rank = 32;
    o.offsets = {1, 2, 4, 8, 12, 16};
    o.direction = dir;
    auto d = compare_paths(o, 2, 128, at::kFloat, 7);
    std::printf("paper sizes (%s): out %.3g grad %.3g\n", dir == PairDirection::kFuture ? "future" : "past",
                d.out, d.grad);
    EXPECT_LE(d.out, 1e-5);
    EXPECT_LE(d.grad, 1e-5);
  }
}

// Whole model, both offset modes: "past" and "literal-past" with the same weights.
TEST(FastVsLiteral, WholeModelBothOffsetModes) {
  for (std::string mode : {"per-layer", "all"}) {
    for (std::string dir : {"future", "past"}) {
      ModelConfig c;
      c.vocab_size = 50;
      c.d_model = 32;
      c.rank = 6;
      c.layers = 3;
      c.max_len = 20;
      c.offsets = {1, 3, 7};
      c.offset_mode = mode;
      c.mixer = dir;
      at::manual_seed(11);
      LanguageModel fast(c);
      c.mixer = "literal-" + dir;
      LanguageModel literal(c);
      // Same checkpoint keys: copy every parameter across.
      auto src = fast->named_parameters();
      for (auto& kv : literal->named_parameters()) {
        at::NoGradGuard ng;
        kv.value().copy_(src[kv.key()]);
      }
      fast->to(at::kDouble);
      literal->to(at::kDouble);
      fast->eval();
      literal->eval();
      auto ids = at::randint(0, 50, {2, 17}, at::kLong);
      double diff = (fast->forward(ids) - literal->forward(ids)).abs().max().item<double>();
      EXPECT_LE(diff, 1e-12) << mode << " " << dir;
    }
  }
}
