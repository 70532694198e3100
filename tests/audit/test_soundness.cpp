// No secondary check can end the audit, the headline names what was found, and the precision
// floor measures rounding, not the kinks of a piecewise-linear model; the soundness suite
// (audits/soundness.json: BatchNorm, GroupNorm, InstanceNorm, LayerNorm, ReLU models in float64).
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/grad_mode.h>  // at::NoGradGuard: not reached through ATen.h in LibTorch 2.x
#include <c10/util/Exception.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "audit/audit_suite.h"
#include "formats/model_file.h"
#include "audit/causality_audit.h"
#include "audit/incremental_audit.h"
#include "audit/precision_switch.h"
#include "function_target.h"

using namespace grassaudit;
using grassaudit::testing::FunctionTarget;

namespace {
AuditOptions soundness_options(int64_t L) { return grassaudit::testing::audit_options(L, 3); }
at::Tensor read_ahead_by(const at::Tensor& x, int64_t D) {  // out_t = x_{t+D} (0 past the end)
  const int64_t L = x.size(1);
  if (D >= L) return at::zeros_like(x);
  return at::constant_pad_nd(x.narrow(1, D, L - D), {0, 0, 0, D}, 0.0);
}

// A causal model with a buffer its forward saves for the backward (y = x * scale) and puts back
// in place after every forward unless held, as TorchScriptTarget does with BatchNorm's running
// statistics: the version bump of that copy voids a backward that comes after it.
class RestoringTarget : public FunctionTarget {
 public:
  RestoringTarget()
      : FunctionTarget("restoring", 2, [this](const at::Tensor& x, bool) { return x * scale_.to(x.scalar_type()); }) {}
  at::Tensor forward(const at::Tensor& x) override {
    auto y = FunctionTarget::forward(x);
    if (!held_) {
      at::NoGradGuard no_grad;
      scale_.copy_(record_);
    }
    return y;
  }
  bool to_dtype(at::ScalarType d, std::string* why) override {
    scale_ = scale_.to(d);
    record_ = record_.to(d);
    return FunctionTarget::to_dtype(d, why);
  }
  void hold_state(bool hold) override {
    const bool release = held_ && !hold;
    held_ = hold;
    if (release) {
      at::NoGradGuard no_grad;
      scale_.copy_(record_);
    }
  }

 private:
  at::Tensor scale_ = at::full({2}, 1.5), record_ = at::full({2}, 1.5);
  bool held_ = false;
};

// A target whose gradient pass fails the way LibTorch does.
class FailingGradientTarget : public FunctionTarget {
 public:
  FailingGradientTarget()
      : FunctionTarget("failing-gradient", 2, [](const at::Tensor& x, bool) { return x + 0.5 * read_ahead_by(x, 2); }) {}
  at::Tensor forward_from_embedding(const at::Tensor&) override {
    TORCH_CHECK(false, "one of the variables needed for gradient computation has been modified by an inplace operation");
    return {};
  }
};
}  // namespace

TEST(SecondaryChecks, GradientMethodPutsStateBackOnlyAfterItsBackward) {
  RestoringTarget t;
  auto r = run_causality_audit(t, soundness_options(16));
  EXPECT_EQ(r.verdict(), Verdict::kCausal);
  ASSERT_TRUE(r.gradient.ran) << r.gradient.not_run;
  EXPECT_TRUE(r.gradient.agrees);
  EXPECT_EQ(r.gradient.mode, "eval");
}

TEST(SecondaryChecks, AGradientMethodThatCannotRunIsReportedAndThePerturbationVerdictStands) {
  FailingGradientTarget t;
  AuditResult r;
  ASSERT_NO_THROW(r = run_causality_audit(t, soundness_options(16)));
  EXPECT_EQ(r.verdict(), Verdict::kLeaky);
  EXPECT_EQ(r.leak_horizon, 2);
  EXPECT_FALSE(r.gradient.ran);
  EXPECT_NE(r.gradient.not_run.find("modified by an inplace operation"), std::string::npos) << r.gradient.not_run;
  EXPECT_EQ(r.gradient.not_run.find('\n'), std::string::npos) << "one line";
  EXPECT_NE(summarize(r).find("gradient check: not run (one of the variables"), std::string::npos) << summarize(r);
  const auto j = to_json(r);
  EXPECT_TRUE(j["gradient_check"]["verdict"].is_null());
  EXPECT_NE(j["gradient_check"]["not_run"].get<std::string>().find("inplace"), std::string::npos);
}

TEST(SecondaryChecks, GradientsAreComparedWithTheirOwnMode) {
  // A leak in train mode only: eval-mode gradients see none, and that is no disagreement.
  FunctionTarget t("train-only", 2, [](const at::Tensor& x, bool training) {
    return training ? x + 0.5 * read_ahead_by(x, 3) : x * 1.0;
  });
  auto r = run_causality_audit(t, soundness_options(16));
  EXPECT_EQ(r.leak_horizon, 3);
  ASSERT_TRUE(r.gradient.ran);
  EXPECT_EQ(r.gradient.mode, "eval");
  EXPECT_EQ(r.gradient.leak_horizon, 0);
  EXPECT_TRUE(r.gradient.agrees);
  auto train_only = soundness_options(16);
  train_only.mode = "train";
  auto rt = run_causality_audit(t, train_only);
  ASSERT_TRUE(rt.gradient.ran);
  EXPECT_EQ(rt.gradient.mode, "train");
  EXPECT_EQ(rt.gradient.leak_horizon, 3);
  EXPECT_TRUE(rt.gradient.agrees);
}

TEST(Headline, NamesEachViolationByItsOwnName) {
  AuditResult r;
  r.target = "m.pt";
  r.precision = "float64";
  Evidence ev;
  ev.position = 5;
  ev.effect = 0.25;
  ev.text = "y_5 from step() differs";
  r.violations.push_back({ViolationKind::kIncremental, 0, 0, ev});
  IncrementalResult inconsistent;
  inconsistent.consistent = false;
  r.incremental = std::make_shared<const IncrementalResult>(inconsistent);
  std::string head = summarize(r).substr(0, summarize(r).find('\n'));
  EXPECT_EQ(head.rfind("m.pt: causal (leak horizon 0", 0), 0u) << head;
  EXPECT_NE(head.find("; incremental path INCONSISTENT (step() differs from forward() by 0.25 at y_5)"),
            std::string::npos)
      << head;
  EXPECT_EQ(head.find("LEAKY"), std::string::npos) << head;

  IncrementalResult not_isolated;
  not_isolated.isolation = false;
  r.incremental = std::make_shared<const IncrementalResult>(not_isolated);
  head = summarize(r).substr(0, summarize(r).find('\n'));
  EXPECT_NE(head.find("; incremental path NOT ISOLATED"), std::string::npos) << head;

  Evidence fut;
  fut.text = "y_0 moved";
  r.violations.insert(r.violations.begin(), Violation{ViolationKind::kFuture, 3, 0, fut});
  r.leak_horizon = 3;
  Evidence batch;
  batch.mode = "train";
  r.violations.push_back({ViolationKind::kBatch, 0, 0, batch});
  head = summarize(r).substr(0, summarize(r).find('\n'));
  EXPECT_EQ(head.rfind("m.pt: LEAKY (leak horizon 3", 0), 0u) << head;
  EXPECT_NE(head.find("; BATCH-COUPLED (rows of a batch mix, train mode)"), std::string::npos) << head;
  EXPECT_EQ(to_json(r)["verdict"], "leaky");  // the JSON verdict keeps its meaning
}

// ---- the precision floor of piecewise-linear arithmetic ----
namespace {
// relu(x W) V over 4096 units per position, in the dtype of x: a jitter of the inputs by 1e-6
// moves some unit across its kink.
at::Tensor wide_relu(const at::Tensor& x) {
  static auto gen = at::make_generator<at::CPUGeneratorImpl>(20261202);
  static const at::Tensor W = at::randn({3, 4096}, gen, at::TensorOptions().dtype(at::kDouble)) / 2;
  static const at::Tensor V = at::randn({4096, 3}, gen, at::TensorOptions().dtype(at::kDouble)) / 64;
  const auto dt = x.scalar_type();
  return at::matmul(at::relu(at::matmul(x, W.to(dt))), V.to(dt));
}
}  // namespace

TEST(PrecisionFloor, PiecewiseLinearFloat64ModelReadsAFloat64Floor) {
  FunctionTarget t("wide-relu", 3, [](const at::Tensor& x, bool) { return wide_relu(x) + 1e-6 * read_ahead_by(x, 1); });
  auto r = run_causality_audit(t, soundness_options(32));
  ASSERT_TRUE(r.precision_floor.has_value());
  EXPECT_TRUE(r.precision_floor->measured);
  EXPECT_LT(r.precision_floor->value, 1e-13);
  EXPECT_FALSE(r.precision_floor->float32_sized);
  // Horizons against 100 x the measured floor; the comparisons across shapes keep 1e-9.
  EXPECT_DOUBLE_EQ(r.threshold(), 100 * std::max(r.precision_floor->value, kFloat64Unit));
  EXPECT_DOUBLE_EQ(r.precision_floor->threshold, kLeakThreshold64);
}

TEST(PrecisionFloor, SmallLeakThroughAReluModelIsFound) {
  // About 1e-7 of the output scale: below what a floor inflated by kinks (1e-9 .. 1e-8) lets through.
  FunctionTarget t("wide-relu-leak", 3,
                   [](const at::Tensor& x, bool) { return wide_relu(x) + 1e-7 * read_ahead_by(x, 1); });
  auto r = run_causality_audit(t, soundness_options(32));
  EXPECT_EQ(r.verdict(), Verdict::kLeaky);
  EXPECT_EQ(r.leak_horizon, 1);
  ASSERT_TRUE(r.precision_floor.has_value());
  EXPECT_FALSE(r.precision_floor->float32_sized);
}

namespace {
// y_t = sum_k 0.5^k x_{t+k}: every output reads every later input, by an effect that halves per step.
at::Tensor backward_decay(const at::Tensor& x) {
  const int64_t L = x.size(1);
  std::vector<at::Tensor> out(static_cast<size_t>(L));
  at::Tensor h = at::zeros_like(x.select(1, 0));
  for (int64_t t = L - 1; t >= 0; --t) out[static_cast<size_t>(t)] = h = x.select(1, t) + 0.5 * h;
  return at::stack(out, 1);
}
}  // namespace

TEST(DecayingDependence, IsFollowedDownToTheMeasuredFloorAndSaidToDecay) {
  FunctionTarget t("decay-0.5", 2, [](const at::Tensor& x, bool) { return backward_decay(x); });
  const int64_t L = 64;
  auto r = run_causality_audit(t, soundness_options(L));
  ASSERT_TRUE(r.precision_floor.has_value());
  EXPECT_EQ(r.precision, "float64");
  // 0.5^D crosses 1e-9 near D = 30 and 100 x a float64 floor (~1e-14) near D = 45.
  EXPECT_GE(r.leak_horizon, 40);
  EXPECT_LT(r.leak_horizon, L - 1);
  ASSERT_TRUE(r.effect_at_horizon.has_value());
  ASSERT_TRUE(r.effect_beyond_horizon.has_value());
  EXPECT_GT(*r.effect_at_horizon, r.threshold());
  EXPECT_LE(*r.effect_beyond_horizon, r.threshold());
  EXPECT_GT(*r.effect_beyond_horizon, 0.0);  // it decays, it does not stop
  ASSERT_TRUE(r.structural_horizon().has_value());
  EXPECT_EQ(*r.structural_horizon(), L - 1);   // 0.5^63 is a float64 number
  EXPECT_EQ(r.decaying(), std::optional<bool>(true));
  EXPECT_TRUE(r.gradient.agrees) << r.gradient.leak_horizon << " vs " << r.leak_horizon;
  const auto j = to_json(r);
  EXPECT_EQ(j.at("decaying"), true);
  EXPECT_EQ(j.at("structural_horizon"), L - 1);
  EXPECT_EQ(j.at("gradient_check").at("structural_horizon"), L - 1);
  EXPECT_NE(summarize(r).find("decaying; a path reaches 63"), std::string::npos) << summarize(r);
}

TEST(DecayingDependence, AStopIsNotADecay) {
  FunctionTarget t("shift-3", 2, [](const at::Tensor& x, bool) { return x + 0.1 * read_ahead_by(x, 3); });
  auto r = run_causality_audit(t, soundness_options(32));
  EXPECT_EQ(r.leak_horizon, 3);
  EXPECT_EQ(r.effect_beyond_horizon, std::optional<double>(0.0));
  EXPECT_EQ(r.structural_horizon(), std::optional<int64_t>(3));
  EXPECT_EQ(r.decaying(), std::optional<bool>(false));
  EXPECT_TRUE(r.gradient.agrees);
}

TEST(AuditSuite, SoundnessControlsMatchTheirExpectations) {
  AuditOptions o;
  auto results = run_audit_suite(std::string(GRASSAUDIT_SOURCE_DIR) + "/audits/soundness.json", o, open_model_file);
  ASSERT_GE(results.size(), 30u);
  for (const auto& r : results) EXPECT_TRUE(r.pass) << r.name << ": " << r.detail;
}

TEST(AuditSuite, LayerSurveyMatchesBruteForce) {
  // Every stateful, normalising or piecewise-linear torch.nn layer, causal and leaky, eval and
  // train, and its zero-head twin (reference/make_layer_survey.py).
  AuditOptions o;
  auto results = run_audit_suite(std::string(GRASSAUDIT_SOURCE_DIR) + "/audits/layers.json", o, open_model_file);
  ASSERT_GE(results.size(), 90u);
  for (const auto& r : results) EXPECT_TRUE(r.pass) << r.name << ": " << r.detail;
}
