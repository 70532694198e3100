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
#include "audit/causality_audit.h"
#include "function_target.h"

using namespace grassaudit;
using grassaudit::testing::FunctionTarget;

namespace {
AuditOptions opts(int64_t L) { return grassaudit::testing::audit_options(L, 3); }
at::Tensor shift_left(const at::Tensor& x, int64_t D) {  // out_t = x_{t+D} (0 past the end)
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
      : FunctionTarget("failing-gradient", 2, [](const at::Tensor& x, bool) { return x + 0.5 * shift_left(x, 2); }) {}
  at::Tensor forward_from_embedding(const at::Tensor&) override {
    TORCH_CHECK(false, "one of the variables needed for gradient computation has been modified by an inplace operation");
    return {};
  }
};
}  // namespace

TEST(SecondaryChecks, GradientMethodPutsStateBackOnlyAfterItsBackward) {
  RestoringTarget t;
  auto r = run_causality_audit(t, opts(16));
  EXPECT_EQ(r.verdict, "causal");
  ASSERT_TRUE(r.gradient.ran) << r.gradient.not_run;
  EXPECT_TRUE(r.gradient.agrees);
  EXPECT_EQ(r.gradient.mode, "eval");
}

TEST(SecondaryChecks, AGradientMethodThatCannotRunIsReportedAndThePerturbationVerdictStands) {
  FailingGradientTarget t;
  AuditResult r;
  ASSERT_NO_THROW(r = run_causality_audit(t, opts(16)));
  EXPECT_EQ(r.verdict, "leaky");
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
    return training ? x + 0.5 * shift_left(x, 3) : x * 1.0;
  });
  auto r = run_causality_audit(t, opts(16));
  EXPECT_EQ(r.leak_horizon, 3);
  ASSERT_TRUE(r.gradient.ran);
  EXPECT_EQ(r.gradient.mode, "eval");
  EXPECT_EQ(r.gradient.leak_horizon, 0);
  EXPECT_TRUE(r.gradient.agrees);
  auto train_only = opts(16);
  train_only.eval_mode = false;
  auto rt = run_causality_audit(t, train_only);
  ASSERT_TRUE(rt.gradient.ran);
  EXPECT_EQ(rt.gradient.mode, "train");
  EXPECT_EQ(rt.gradient.leak_horizon, 3);
  EXPECT_TRUE(rt.gradient.agrees);
}

TEST(Headline, NamesEachViolationByItsOwnName) {
  AuditResult r;
  r.target = "m.pt";
  r.verdict = "leaky";
  r.precision = "float64";
  Evidence ev;
  ev.position = 5;
  ev.effect = 0.25;
  ev.text = "y_5 from step() differs";
  r.violations.push_back({"incremental", 0, 0, ev});
  r.incremental_json = R"({"consistent": false})";
  std::string head = summarize(r).substr(0, summarize(r).find('\n'));
  EXPECT_EQ(head.rfind("m.pt: causal (leak horizon 0", 0), 0u) << head;
  EXPECT_NE(head.find("; incremental path INCONSISTENT (step() differs from forward() by 0.25 at y_5)"),
            std::string::npos)
      << head;
  EXPECT_EQ(head.find("LEAKY"), std::string::npos) << head;

  r.incremental_json = R"({"consistent": true})";
  head = summarize(r).substr(0, summarize(r).find('\n'));
  EXPECT_NE(head.find("; incremental path NOT ISOLATED"), std::string::npos) << head;

  Evidence fut;
  fut.text = "y_0 moved";
  r.violations.insert(r.violations.begin(), Violation{"future", 3, 0, fut});
  r.leak_horizon = 3;
  Evidence batch;
  batch.mode = "train";
  r.violations.push_back({"batch", 0, 0, batch});
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
  FunctionTarget t("wide-relu", 3, [](const at::Tensor& x, bool) { return wide_relu(x) + 1e-6 * shift_left(x, 1); });
  auto r = run_causality_audit(t, opts(32));
  ASSERT_TRUE(r.precision_floor.has_value());
  EXPECT_TRUE(r.precision_floor->measured);
  EXPECT_LT(r.precision_floor->value, 1e-13);
  EXPECT_FALSE(r.precision_floor->float32_sized);
  EXPECT_EQ(r.threshold, kLeakThreshold64);
}

TEST(PrecisionFloor, SmallLeakThroughAReluModelIsFound) {
  // About 1e-7 of the output scale: below what a floor inflated by kinks (1e-9 .. 1e-8) lets through.
  FunctionTarget t("wide-relu-leak", 3,
                   [](const at::Tensor& x, bool) { return wide_relu(x) + 1e-7 * shift_left(x, 1); });
  auto r = run_causality_audit(t, opts(32));
  EXPECT_EQ(r.verdict, "leaky");
  EXPECT_EQ(r.leak_horizon, 1);
  ASSERT_TRUE(r.precision_floor.has_value());
  EXPECT_FALSE(r.precision_floor->float32_sized);
}

TEST(AuditSuite, SoundnessControlsMatchTheirExpectations) {
  AuditOptions o;
  auto results = run_audit_suite(std::string(GRASSAUDIT_SOURCE_DIR) + "/audits/soundness.json", o);
  ASSERT_GE(results.size(), 30u);
  for (const auto& r : results) EXPECT_TRUE(r.pass) << r.name << ": " << r.detail;
}
