// Rounding is not a leak, small leaks are: how the audit tells them apart (float64 re-run),
// plus its error handling, train-only leaks and the vacuity warning.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "audit/causality_audit.h"
#include "function_target.h"
#include "util/error.h"

using namespace grassaudit;
using grassaudit::testing::FunctionTarget;

namespace {
AuditOptions opts(int64_t L) { return grassaudit::testing::audit_options(L, 3); }
// Causal long convolution with a fixed decaying kernel, computed by FFT of size 2L: exact
// arithmetic would give a causal result; FFT rounding mixes every position a little.
at::Tensor fft_causal_conv(const at::Tensor& x) {
  const int64_t L = x.size(1);
  auto k = at::exp(-0.1 * at::arange(L, x.options())).view({1, L, 1});
  auto X = at::fft_rfft(x, 2 * L, 1);
  auto K = at::fft_rfft(k, 2 * L, 1);
  return at::fft_irfft(X * K, 2 * L, 1).narrow(1, 0, L);
}
// The same kernel by FFT of size L: circular wrap-around, a real leak.
at::Tensor fft_circular_conv(const at::Tensor& x) {
  const int64_t L = x.size(1);
  auto k = at::exp(-0.1 * at::arange(L, x.options())).view({1, L, 1});
  return at::fft_irfft(at::fft_rfft(x, L, 1) * at::fft_rfft(k, L, 1), L, 1);
}
at::Tensor shift_left(const at::Tensor& x, int64_t D) {  // out_t = x_{t+D} (0 past the end)
  const int64_t L = x.size(1);
  if (D >= L) return at::zeros_like(x);
  return at::constant_pad_nd(x.narrow(1, D, L - D), {0, 0, 0, D}, 0.0);
}
}  // namespace

TEST(RoundingVsLeak, FftCausalConvolutionIsCausalWithARoundingNote) {
  FunctionTarget t("fft-2L", 3, [](const at::Tensor& x, bool) { return fft_causal_conv(x); });
  auto r = run_causality_audit(t, opts(48));
  EXPECT_EQ(r.verdict(), Verdict::kCausal);
  EXPECT_TRUE(r.rounding_only());
  EXPECT_GT(r.max_effect_float32, 0.0);       // float32 does see cross-talk ...
  EXPECT_LT(r.max_effect, kLeakThreshold64);  // ... that vanishes in float64
  EXPECT_EQ(r.precision, "float64");
  ASSERT_FALSE(r.notes.empty());
  EXPECT_NE(r.notes.front().find("rounding"), std::string::npos);
  EXPECT_TRUE(r.gradient.agrees);
}

TEST(RoundingVsLeak, CircularFftIsLeaky) {
  FunctionTarget t("fft-L", 3, [](const at::Tensor& x, bool) { return fft_circular_conv(x); });
  auto r = run_causality_audit(t, opts(32));
  EXPECT_EQ(r.verdict(), Verdict::kLeaky);
  EXPECT_EQ(r.leak_horizon, 31);
}

TEST(RoundingVsLeak, DependenceOfOneMillionthIsLeaky) {
  // y_t = x_t + 1e-6 x_{t+1}: a genuine dependence 1e-6 of the output scale, below float32
  // rounding of many models, far above float64 rounding.
  FunctionTarget t("tiny", 2, [](const at::Tensor& x, bool) { return x + 1e-6 * shift_left(x, 1); });
  auto r = run_causality_audit(t, opts(32));
  EXPECT_EQ(r.verdict(), Verdict::kLeaky);
  EXPECT_EQ(r.leak_horizon, 1);
  EXPECT_FALSE(r.rounding_only());
  EXPECT_GT(r.max_effect, 1e-7);
  EXPECT_EQ(r.gradient.verdict(), Verdict::kLeaky);
}

TEST(RoundingVsLeak, ReductionOverThePrefixIsCausal) {
  // Running mean via cumsum: a reduction over the sequence, exactly causal.
  FunctionTarget t("cummean", 2, [](const at::Tensor& x, bool) {
    auto n = at::arange(1, x.size(1) + 1, x.options()).view({1, -1, 1});
    return x.cumsum(1) / n;
  });
  auto r = run_causality_audit(t, opts(40));
  EXPECT_EQ(r.verdict(), Verdict::kCausal);
}

TEST(RoundingVsLeak, WithoutFloat64TheAuditSaysItsSensitivity) {
  FunctionTarget t("no-f64", 2, [](const at::Tensor& x, bool) { return x + 1e-2 * shift_left(x, 2); },
                   /*allow_double=*/false);
  auto r = run_causality_audit(t, opts(16));
  EXPECT_EQ(r.verdict(), Verdict::kLeaky);
  EXPECT_EQ(r.leak_horizon, 2);
  EXPECT_EQ(r.precision, "float32");
  ASSERT_FALSE(r.notes.empty());
  EXPECT_NE(r.notes.front().find("float64 unavailable"), std::string::npos);
}

TEST(AuditModes, LeakOnlyInTrainModeIsLeaky) {
  FunctionTarget t("train-only", 2, [](const at::Tensor& x, bool training) {
    return training ? x + 0.5 * shift_left(x, 3) : x * 1.0;
  });
  auto r = run_causality_audit(t, opts(16));
  EXPECT_EQ(r.verdict(), Verdict::kLeaky);
  EXPECT_EQ(r.leak_horizon, 3);
  ASSERT_EQ(r.mode_horizons.size(), 2u);
  EXPECT_EQ(r.mode_horizons[0], std::make_pair(std::string("eval"), int64_t{0}));
  EXPECT_EQ(r.mode_horizons[1], std::make_pair(std::string("train"), int64_t{3}));
  auto eval_only = opts(16);
  eval_only.mode = "eval";
  EXPECT_EQ(run_causality_audit(t, eval_only).verdict(), Verdict::kCausal);
}

TEST(AuditModes, DropoutAloneIsNotALeak) {
  // Dropout draws differ between unpaired passes; the RNG reset makes the pairing exact.
  FunctionTarget t("dropout", 2, [](const at::Tensor& x, bool training) {
    auto y = x.cumsum(1);
    return training ? at::dropout(y, 0.3, true) : y;
  });
  auto r = run_causality_audit(t, opts(16));
  EXPECT_EQ(r.verdict(), Verdict::kCausal);
  EXPECT_EQ(r.max_effect, 0.0);
}

TEST(AuditModes, LeakOnlyForLongSequencesIsFound) {
  FunctionTarget t("long-only", 1, [](const at::Tensor& x, bool) {
    return x.size(1) > 20 ? x + 0.1 * shift_left(x, 5) : x.cumsum(1);
  });
  auto r = run_causality_audit(t, opts(24));
  EXPECT_EQ(r.verdict(), Verdict::kLeaky);
  EXPECT_EQ(r.leak_horizon, 5);
  auto short_only = run_causality_audit(t, opts(20));
  EXPECT_EQ(short_only.verdict(), Verdict::kCausal);
}

TEST(AuditModes, LeakOnlyAtAnOddLengthIsFoundByTheSchedule) {
  // Leaks only when L is odd: L = 32 itself is clean, L - 1 = 31 in the schedule is not.
  FunctionTarget t("odd-only", 1, [](const at::Tensor& x, bool) {
    return x.size(1) % 2 == 1 ? x + 0.1 * shift_left(x, 1) : x * 1.0;
  });
  auto r = run_causality_audit(t, opts(32));
  EXPECT_EQ(r.verdict(), Verdict::kLeaky);
  ASSERT_TRUE(r.first_leaking_cut.has_value());
}

TEST(AuditVacuity, PositionWiseModelIsFlaggedVacuous) {
  FunctionTarget t("pointwise", 2, [](const at::Tensor& x, bool) { return at::tanh(x); });
  auto r = run_causality_audit(t, opts(12));
  EXPECT_EQ(r.verdict(), Verdict::kCausal);
  EXPECT_TRUE(r.vacuous);
  FunctionTarget u("cumsum", 2, [](const at::Tensor& x, bool) { return x.cumsum(1); });
  EXPECT_FALSE(run_causality_audit(u, opts(12)).vacuous);
}

TEST(AuditErrors, NanWrongShapeAndThrowingModelsAreInputErrors) {
  FunctionTarget nan("nan", 2, [](const at::Tensor& x, bool) { return x / 0.0 * 0.0; });
  EXPECT_THROW(run_causality_audit(nan, opts(8)), InputError);
  FunctionTarget inf("inf", 2, [](const at::Tensor& x, bool) { return x / 0.0; });
  EXPECT_THROW(run_causality_audit(inf, opts(8)), InputError);
  FunctionTarget shape("shape", 2, [](const at::Tensor& x, bool) { return x.sum(1); });
  EXPECT_THROW(run_causality_audit(shape, opts(8)), InputError);
}

// The gate's stop_when_leaky: a leak proven in the first table (eval mode at L) ends the audit
// there, with the horizon exact for that table; a model clean at L still gets the next tables,
// so a leak that shows only in train mode or at a shorter length is still found; a causal
// model's audit is unchanged.
TEST(AuditGateSchedule, StopsAfterTheFirstLengthThatProvesALeak) {
  FunctionTarget leaky("shift-3", 1, [](const at::Tensor& x, bool) { return x + 0.1 * shift_left(x, 3); });
  AuditOptions o = opts(32);
  o.stop_when_leaky = true;
  auto r = run_causality_audit(leaky, o);
  EXPECT_EQ(r.verdict(), Verdict::kLeaky);
  EXPECT_EQ(r.leak_horizon, 3);
  EXPECT_TRUE(r.stopped_early);
  EXPECT_EQ(r.seq_lens, (std::vector<int64_t>{32}));
  EXPECT_EQ(r.seq_lens_planned, audit_length_schedule(32));
  EXPECT_EQ(r.modes, (std::vector<std::string>{"eval"}));
  EXPECT_EQ(r.modes_planned, (std::vector<std::string>{"eval", "train"}));
  EXPECT_EQ(r.mode_horizons.size(), 1u);
  EXPECT_GT(r.leak_map()[0][2], 0.0);  // y_0 <- x_3
  auto full = run_causality_audit(leaky, opts(32));
  EXPECT_FALSE(full.stopped_early);
  EXPECT_EQ(full.seq_lens, audit_length_schedule(32));
  EXPECT_EQ(full.leak_horizon, r.leak_horizon);
  EXPECT_LT(r.probes, full.probes);

  // Leaks only at odd lengths: clean at 32, so the gate goes on and finds it at 31.
  FunctionTarget odd("odd-only", 1, [](const at::Tensor& x, bool) {
    return x.size(1) % 2 == 1 ? x + 0.1 * shift_left(x, 1) : x * 1.0;
  });
  auto g = run_causality_audit(odd, o);
  EXPECT_EQ(g.verdict(), Verdict::kLeaky);
  EXPECT_TRUE(g.stopped_early);
  EXPECT_EQ(g.seq_lens, (std::vector<int64_t>{32, 31}));
  EXPECT_EQ(g.length_horizons, (std::vector<std::pair<int64_t, int64_t>>{{32, 0}, {31, 1}}));

  // Leaks only in train mode: eval at L is clean, train at L proves it.
  FunctionTarget train_only("train-only", 1, [](const at::Tensor& x, bool train) {
    return train ? x + 0.1 * shift_left(x, 2) : x * 1.0;
  });
  auto tr = run_causality_audit(train_only, o);
  EXPECT_EQ(tr.verdict(), Verdict::kLeaky);
  EXPECT_EQ(tr.leak_horizon, 2);
  EXPECT_EQ(tr.modes, (std::vector<std::string>{"eval", "train"}));
  EXPECT_EQ(tr.seq_lens, (std::vector<int64_t>{32}));

  FunctionTarget causal("prefix-sum", 1, [](const at::Tensor& x, bool) { return x.cumsum(1); });
  auto c = run_causality_audit(causal, o);
  EXPECT_EQ(c.verdict(), Verdict::kCausal);
  EXPECT_FALSE(c.stopped_early);
  EXPECT_EQ(c.seq_lens, audit_length_schedule(32));
}

// ---- the measured precision floor (#25) ----
namespace {
// A causal running mean computed as a float32 lower-triangular GEMM whatever dtype x has: a
// float32 island inside a "float64" forward (prefix runs round differently from the full run).
at::Tensor float32_running_mean(const at::Tensor& x) {
  const int64_t L = x.size(1);
  auto m = at::ones({L, L}, x.options().dtype(at::kFloat)).tril();
  m = m / m.sum(1, true);
  return at::matmul(m, x.to(at::kFloat)).to(x.scalar_type());
}
}  // namespace

TEST(PrecisionFloor, TrueFloat64ModelDecidesHorizonsAgainstItsMeasuredFloor) {
  FunctionTarget t("tiny", 2, [](const at::Tensor& x, bool) { return x + 1e-6 * shift_left(x, 1); });
  auto r = run_causality_audit(t, opts(32));
  ASSERT_TRUE(r.precision_floor.has_value());
  EXPECT_TRUE(r.precision_floor->measured);
  EXPECT_EQ(r.precision_floor->precision, "float64");
  EXPECT_LT(r.precision_floor->value, 1e-13);
  EXPECT_FALSE(r.precision_floor->float32_sized);
  EXPECT_LT(r.threshold(), 1e-12);  // 100 x the floor: far below the 1e-9 kept where no floor is measured
  EXPECT_DOUBLE_EQ(r.precision_floor->horizon_threshold, r.threshold());
  EXPECT_DOUBLE_EQ(r.precision_floor->threshold, kLeakThreshold64);  // batch, length, incremental
  EXPECT_EQ(r.verdict(), Verdict::kLeaky);  // 1e-6 of the output scale is still a leak
}

TEST(PrecisionFloor, Float32IslandIsMeasuredAndNotReadAsLengthDependence) {
  FunctionTarget t("f32-island", 3, [](const at::Tensor& x, bool) { return x + float32_running_mean(x); });
  auto r = run_causality_audit(t, opts(32));
  ASSERT_TRUE(r.precision_floor.has_value());
  EXPECT_TRUE(r.precision_floor->float32_sized);
  EXPECT_GT(r.precision_floor->value, 1e-10);
  EXPECT_LT(r.precision_floor->value, 1e-6);
  EXPECT_GE(r.threshold(), 100 * r.precision_floor->value);
  EXPECT_EQ(r.verdict(), Verdict::kCausal);
  EXPECT_EQ(r.length_dependent, std::optional<bool>(false));
  bool said = false;
  for (const auto& n : r.notes) said = said || n.find("float32-sized") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST(PrecisionFloor, LeakAboveTheIslandFloorIsStillALeak) {
  FunctionTarget t("f32-island-leak", 3,
                   [](const at::Tensor& x, bool) { return x + float32_running_mean(x) + 1e-3 * shift_left(x, 2); });
  auto r = run_causality_audit(t, opts(32));
  EXPECT_EQ(r.verdict(), Verdict::kLeaky);
  EXPECT_EQ(r.leak_horizon, 2);
}

TEST(PrecisionFloor, Float32FallbackDecidesAgainstItsMeasuredFloorNotAFixedOneTenThousandth) {
  // 3e-5 of the output scale: below the old fixed 1e-4 float32 threshold, far above float32 rounding.
  FunctionTarget t("no-f64-small", 2, [](const at::Tensor& x, bool) { return x + 3e-5 * shift_left(x, 3); },
                   /*allow_double=*/false);
  auto r = run_causality_audit(t, opts(16));
  EXPECT_EQ(r.precision, "float32");
  ASSERT_TRUE(r.precision_floor.has_value());
  EXPECT_EQ(r.precision_floor->precision, "float32");
  EXPECT_LT(r.threshold(), 3e-5);
  EXPECT_GE(r.threshold(), 1e-6);
  EXPECT_EQ(r.verdict(), Verdict::kLeaky);
  EXPECT_EQ(r.leak_horizon, 3);
}
