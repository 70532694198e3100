// The fused (chunked) head loss equals the materialised reference (full logits +
// at::cross_entropy_loss): loss, grad of the hidden states and grad of the tied weight,
// float64 <= 1e-12 and float32 <= 1e-5 relative, for odd token counts, chunks of 1 token up to
// larger than the input, and ignored (-100) targets. Then the same through the whole language
// model (lm_loss, both LossImpl paths, every parameter's gradient), the evaluation sums, thread
// determinism and the --loss-impl parser.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <torch/nn/module.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/fused_head.h"
#include "core/language_model.h"
#include "core/lm_loss.h"
#include "util/error.h"

using namespace grassaudit;

namespace {

// max |a - b| / max |b|: relative to the tensor's scale, so tiny entries do not dominate.
double head_rel_diff(const at::Tensor& a, const at::Tensor& b) {
  const double scale = b.abs().max().item<double>();
  const double diff = (a - b).abs().max().item<double>();
  return scale > 0 ? diff / scale : diff;
}

struct HeadResult {
  at::Tensor loss, grad_h, grad_w;
};

// Loss and gradients of one path, with an upstream gradient of 1 on the mean loss.
HeadResult run_head(bool fused, const at::Tensor& h0, const at::Tensor& w0, const at::Tensor& t, int64_t chunk) {
  auto h = h0.clone().requires_grad_(true);
  auto w = w0.clone().requires_grad_(true);
  auto loss = fused ? fused_head_loss(h, w, t, chunk) : reference_head_loss(h, w, t);
  loss.backward();
  return {loss.detach(), h.grad(), w.grad()};
}

struct Case {
  int64_t N, d, V;
  double ignored_fraction;
};

struct HeadWorst {
  double loss = 0, grad_h = 0, grad_w = 0;
};

// Random hidden states at a trained-model scale (logits of a few units), random targets, a
// fraction of them set to kIgnoreIndex; every chunk size against the reference.
HeadWorst compare_cases(at::ScalarType dtype, uint64_t seed) {
  const std::vector<Case> cases{{1, 4, 3, 0.0},     {7, 5, 11, 0.0},    {37, 8, 50, 0.2},
                                {129, 16, 257, 0.0}, {301, 12, 97, 0.5}, {64, 32, 1000, 0.1}};
  HeadWorst worst;
  std::mt19937 rng(seed);
  for (const auto& c : cases) {
    at::manual_seed(seed + c.N);
    auto opts = at::TensorOptions().dtype(dtype);
    auto h = at::randn({c.N, c.d}, opts);
    auto w = at::randn({c.V, c.d}, opts) * (2.0 / std::sqrt(static_cast<double>(c.d)));
    auto t = at::randint(0, c.V, {c.N}, at::kLong);
    for (int64_t i = 0; i < c.N; ++i)
      if (std::uniform_real_distribution<double>(0, 1)(rng) < c.ignored_fraction) t[i] = kIgnoreIndex;
    if (c.ignored_fraction > 0) t[0] = kIgnoreIndex;  // at least one ignored, and one scored:
    if (c.N > 1) t[c.N - 1] = c.V - 1;               // the last class, in the last (tail) chunk
    auto ref = run_head(false, h, w, t, 0);
    for (int64_t chunk : {int64_t{1}, int64_t{3}, int64_t{16}, c.N, c.N + 5, kDefaultHeadChunk}) {
      auto got = run_head(true, h, w, t, chunk);
      SCOPED_TRACE("N " + std::to_string(c.N) + " V " + std::to_string(c.V) + " chunk " + std::to_string(chunk));
      EXPECT_EQ(got.loss.scalar_type(), dtype);
      EXPECT_EQ(got.loss.dim(), 0);
      worst.loss = std::max(worst.loss, head_rel_diff(got.loss, ref.loss));
      worst.grad_h = std::max(worst.grad_h, head_rel_diff(got.grad_h, ref.grad_h));
      worst.grad_w = std::max(worst.grad_w, head_rel_diff(got.grad_w, ref.grad_w));
      // Ignored rows get no gradient at all.
      auto ignored = t.eq(kIgnoreIndex);
      if (ignored.any().item<bool>()) EXPECT_EQ(got.grad_h.index({ignored}).abs().max().item<double>(), 0.0);
    }
  }
  return worst;
}

}  // namespace

TEST(FusedHead, EqualsReferenceFloat64) {
  auto w = compare_cases(at::kDouble, 11);
  std::cout << "float64 max rel diff: loss " << w.loss << ", grad_h " << w.grad_h << ", grad_w " << w.grad_w << "\n";
  EXPECT_LE(w.loss, 1e-12);
  EXPECT_LE(w.grad_h, 1e-12);
  EXPECT_LE(w.grad_w, 1e-12);
}

TEST(FusedHead, EqualsReferenceFloat32) {
  auto w = compare_cases(at::kFloat, 12);
  std::cout << "float32 max rel diff: loss " << w.loss << ", grad_h " << w.grad_h << ", grad_w " << w.grad_w << "\n";
  EXPECT_LE(w.loss, 1e-5);
  EXPECT_LE(w.grad_h, 1e-5);
  EXPECT_LE(w.grad_w, 1e-5);
}

TEST(FusedHead, UpstreamGradientScalesAndAccumulates) {
  at::manual_seed(3);
  auto h0 = at::randn({23, 6}, at::kDouble), w0 = at::randn({40, 6}, at::kDouble);
  auto t = at::randint(0, 40, {23}, at::kLong);
  auto ref = run_head(false, h0, w0, t, 0);
  // 2.5 * loss, and the weight also used elsewhere (as the tied embedding is): autograd adds.
  auto h = h0.clone().requires_grad_(true), w = w0.clone().requires_grad_(true);
  auto total = 2.5 * fused_head_loss(h, w, t, 5) + w.sum();
  total.backward();
  EXPECT_LE(head_rel_diff(h.grad(), 2.5 * ref.grad_h), 1e-12);
  EXPECT_LE(head_rel_diff(w.grad(), 2.5 * ref.grad_w + 1.0), 1e-12);
}

TEST(FusedHead, OnlyTheInputsThatNeedGradientsGetThem) {
  at::manual_seed(4);
  auto h = at::randn({9, 4}, at::kDouble).requires_grad_(true), w = at::randn({13, 4}, at::kDouble);
  auto t = at::randint(0, 13, {9}, at::kLong);
  fused_head_loss(h, w, t, 4).backward();
  EXPECT_TRUE(h.grad().defined());
  EXPECT_FALSE(w.grad().defined());
  auto ref = run_head(false, h.detach(), w, t, 0);
  EXPECT_LE(head_rel_diff(h.grad(), ref.grad_h), 1e-12);
}

TEST(FusedHead, AllTargetsIgnoredGivesNanLossZeroGradientLikeTheReference) {
  auto h = at::randn({5, 4}, at::kDouble).requires_grad_(true), w = at::randn({7, 4}, at::kDouble).requires_grad_(true);
  auto t = at::full({5}, kIgnoreIndex, at::kLong);
  auto loss = fused_head_loss(h, w, t, 2);
  EXPECT_TRUE(std::isnan(loss.item<double>()));
  EXPECT_TRUE(std::isnan(reference_head_loss(h, w, t).item<double>()));
  loss.backward();
  EXPECT_EQ(h.grad().abs().max().item<double>(), 0.0);
  EXPECT_EQ(w.grad().abs().max().item<double>(), 0.0);
  auto s = fused_head_loss_sum(h, w, t, 2);
  EXPECT_EQ(s.count, 0);
  EXPECT_EQ(s.sum, 0.0);
}

TEST(FusedHead, NoGradModeGivesTheSameLossAndBuildsNoGraph) {
  at::manual_seed(5);
  auto h = at::randn({31, 8}).requires_grad_(true), w = at::randn({90, 8}).requires_grad_(true);
  auto t = at::randint(0, 90, {31}, at::kLong);
  auto with_grad = fused_head_loss(h, w, t, 8);
  at::Tensor without;
  {
    at::NoGradGuard no_grad;
    without = fused_head_loss(h, w, t, 8);
  }
  EXPECT_FALSE(without.requires_grad());
  EXPECT_EQ(with_grad.item<float>(), without.item<float>());
  // The summed variant: sum / count is the mean, count excludes ignored targets.
  t[3] = kIgnoreIndex;
  auto s = fused_head_loss_sum(h, w, t, 8);
  EXPECT_EQ(s.count, 30);
  EXPECT_NEAR(s.sum / s.count, reference_head_loss(h, w, t).item<double>(), 1e-5 * s.sum / s.count);
}

TEST(FusedHead, SameThreadsSameBits) {
  at::manual_seed(6);
  auto h = at::randn({700, 32}), w = at::randn({3001, 32}) * 0.3;
  auto t = at::randint(0, 3001, {700}, at::kLong);
  auto a = run_head(true, h, w, t, 128), b = run_head(true, h, w, t, 128);
  EXPECT_TRUE(at::equal(a.loss, b.loss));
  EXPECT_TRUE(at::equal(a.grad_h, b.grad_h));
  EXPECT_TRUE(at::equal(a.grad_w, b.grad_w));
}

TEST(FusedHead, BadInputsAreRefused) {
  auto h = at::randn({4, 3}), w = at::randn({6, 3});
  auto t = at::randint(0, 6, {4}, at::kLong);
  EXPECT_THROW(fused_head_loss(h, w, t, 0), c10::Error);                         // chunk 0
  EXPECT_THROW(fused_head_loss(h, at::randn({6, 2}), t, 2), c10::Error);         // d mismatch
  EXPECT_THROW(fused_head_loss(h, w, t.narrow(0, 0, 3), 2), c10::Error);         // N mismatch
  EXPECT_THROW(fused_head_loss(h, w, t.to(at::kInt), 2), c10::Error);            // int32 targets
  EXPECT_THROW(fused_head_loss(h, w.to(at::kDouble), t, 2), c10::Error);         // mixed dtypes
  EXPECT_THROW(fused_head_loss(h.view({2, 2, 3}), w, t, 2), c10::Error);         // not [N, d]
  auto bad = t.clone();
  bad[1] = 6;  // out of range, not ignore_index: an error, as at::cross_entropy_loss
  EXPECT_THROW(fused_head_loss(h, w, bad, 2), c10::Error);
}

// The whole model: every parameter's gradient (the tied embedding gets both the head's and the
// lookup's share) through lm_loss, fused against materialized.
namespace {
double model_grad_diff(const std::string& mixer, at::ScalarType dtype, double* loss_diff) {
  ModelConfig cfg;
  cfg.mixer = mixer;
  cfg.vocab_size = 97;
  cfg.d_model = 16;
  cfg.rank = 4;
  cfg.layers = 2;
  cfg.max_len = 11;
  cfg.heads = 2;
  cfg.d_ff = 32;
  cfg.offsets = {1, 2};
  at::manual_seed(7);
  LanguageModel model(cfg);
  model->to(dtype);
  model->eval();  // dropout off: both paths see one function
  auto ids = at::randint(0, 97, {3, 11}, at::kLong), tgt = at::randint(0, 97, {3, 11}, at::kLong);
  tgt[1][4] = kIgnoreIndex;
  auto run = [&](LossImpl impl) {
    model->zero_grad(/*set_to_none=*/false);
    auto loss = lm_loss(model, ids, tgt, impl, 5);
    loss.backward();
    std::vector<at::Tensor> g;
    for (auto& p : model->parameters()) g.push_back(p.grad().clone());
    return std::make_pair(loss.detach(), g);
  };
  auto [lf, gf] = run(LossImpl::kFused);
  auto [lm, gm] = run(LossImpl::kMaterialized);
  *loss_diff = head_rel_diff(lf, lm);
  double worst = 0;
  for (size_t i = 0; i < gf.size(); ++i) worst = std::max(worst, head_rel_diff(gf[i], gm[i]));
  return worst;
}
}  // namespace

TEST(LmLoss, FusedEqualsMaterializedThroughTheWholeModel) {
  for (const std::string mixer : {"past", "attention"}) {
    double l64 = 0, l32 = 0;
    const double g64 = model_grad_diff(mixer, at::kDouble, &l64);
    const double g32 = model_grad_diff(mixer, at::kFloat, &l32);
    std::cout << mixer << ": float64 loss " << l64 << " grads " << g64 << "; float32 loss " << l32 << " grads " << g32
              << "\n";
    EXPECT_LE(l64, 1e-12) << mixer;
    EXPECT_LE(g64, 1e-12) << mixer;
    EXPECT_LE(l32, 1e-5) << mixer;
    EXPECT_LE(g32, 1e-5) << mixer;
  }
}

TEST(LmLoss, SumsAgreeBetweenPaths) {
  ModelConfig cfg;
  cfg.vocab_size = 300;
  cfg.d_model = 16;
  cfg.rank = 4;
  cfg.layers = 1;
  cfg.max_len = 20;
  cfg.d_ff = 32;
  cfg.offsets = {3};
  at::manual_seed(8);
  LanguageModel model(cfg);
  model->eval();  // as evaluate_lm calls it: dropout off
  auto ids = at::randint(0, 300, {4, 20}, at::kLong), tgt = at::randint(0, 300, {4, 20}, at::kLong);
  tgt[0][0] = kIgnoreIndex;
  auto f = lm_loss_sum(model, ids, tgt, LossImpl::kFused, 7);
  auto m = lm_loss_sum(model, ids, tgt, LossImpl::kMaterialized);
  EXPECT_EQ(f.count, 79);
  EXPECT_EQ(m.count, 79);
  EXPECT_NEAR(f.sum, m.sum, 1e-6 * m.sum);
  at::NoGradGuard no_grad;
  EXPECT_NEAR(f.sum / f.count, lm_loss(model, ids, tgt, LossImpl::kMaterialized).item<double>(), 1e-6 * f.sum / f.count);
}

TEST(LmLoss, ParseLossImpl) {
  EXPECT_EQ(parse_loss_impl("fused"), LossImpl::kFused);
  EXPECT_EQ(parse_loss_impl("materialized"), LossImpl::kMaterialized);
  EXPECT_STREQ(loss_impl_name(LossImpl::kFused), "fused");
  EXPECT_STREQ(loss_impl_name(LossImpl::kMaterialized), "materialized");
  try {
    parse_loss_impl("chunked");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "--loss-impl must be fused or materialized, got 'chunked'");
  }
}

TEST(FusedHead, SecondBackwardThroughOneGraphIsRefused) {
  auto h = at::randn({6, 4}, at::kDouble).requires_grad_(true), w = at::randn({9, 4}, at::kDouble);
  auto t = at::randint(0, 9, {6}, at::kLong);
  auto loss = fused_head_loss(h, w, t, 4);
  loss.backward({}, /*retain_graph=*/true);
  EXPECT_THROW(loss.backward(), c10::Error);
}
