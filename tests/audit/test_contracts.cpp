// The audit beyond "does y_t read the future": batch and length independence, the past horizon
// against a declared window, the lookahead contract, and the float64 fallback when a model
// converts but cannot run in float64. Models are small functions (FunctionTarget).
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include "audit/causality_audit.h"
#include "audit/checks/length_check.h"
#include "core/attention_masks.h"
#include "function_target.h"
#include "util/error.h"

using namespace grassaudit;
using grassaudit::testing::FunctionTarget;

namespace {

AuditOptions small(int64_t L) {
  AuditOptions o;
  o.seq_len = L;
  o.trials = 2;
  o.batch = 8;
  return o;
}

std::vector<std::string> kinds(const AuditResult& r) {
  std::vector<std::string> out;
  for (const auto& v : r.violations) out.emplace_back(violation_kind_name(v.kind));
  return out;
}

// y = M x with M [L, L] a 0/1 mask (weights from (i, j) only, never from L).
at::Tensor mix(const at::Tensor& x, const at::Tensor& mask) {
  const int64_t L = x.size(1);
  auto i = at::arange(L, x.options()).view({L, 1}), j = at::arange(L, x.options()).view({1, L});
  auto w = ((i * 5 + j * 3).remainder(7) / 7 + 0.5) * mask.to(x.scalar_type());
  return at::einsum("ij,bjc->bic", {w, x});
}

}  // namespace

TEST(AuditContracts, TrainBatchStatisticsAreBatchCouplingNotAFutureLeak) {
  // Per-position standardisation over the batch in train mode, like nn.BatchNorm1d on [B, C]:
  // refuses a batch of one, as BatchNorm does in training.
  FunctionTarget t("batch-stats", 3, [](const at::Tensor& x, bool training) {
    if (!training) return x * 2;
    if (x.size(0) < 2) throw InputError("expected more than 1 value per channel when training");
    auto m = x.mean(0, true);
    auto v = x.var(0, false, true);
    return (x - m) / (v + 1e-5).sqrt();
  });
  auto r = run_causality_audit(t, small(12));
  EXPECT_EQ(r.leak_horizon, 0);
  ASSERT_TRUE(r.batch_coupled.has_value());
  EXPECT_TRUE(*r.batch_coupled);
  EXPECT_EQ(r.batch_evidence.mode, "train");
  EXPECT_EQ(kinds(r), std::vector<std::string>{"batch"});
  EXPECT_EQ(r.verdict(), Verdict::kLeaky);
}

TEST(AuditContracts, BatchIndependentModelIsNotCoupled) {
  FunctionTarget t("cummean", 2, [](const at::Tensor& x, bool) {
    auto n = at::arange(1, x.size(1) + 1, x.options()).view({1, -1, 1});
    return x.cumsum(1) / n;
  });
  auto r = run_causality_audit(t, small(10));
  EXPECT_EQ(r.batch_coupled, std::optional<bool>(false));
  EXPECT_EQ(r.length_dependent, std::optional<bool>(false));
  EXPECT_TRUE(r.violations.empty());
  EXPECT_EQ(r.past_horizon, std::optional<int64_t>(9));
}

TEST(AuditContracts, PositionsNormalisedByLengthAreLengthDependent) {
  FunctionTarget t("t-over-L", 2, [](const at::Tensor& x, bool) {
    const int64_t L = x.size(1);
    auto frac = at::arange(L, x.options()).div(static_cast<double>(L)).view({1, L, 1});
    return x + frac;
  });
  auto r = run_causality_audit(t, small(10));
  EXPECT_EQ(r.leak_horizon, 0);  // same-length perturbation sees nothing
  EXPECT_EQ(r.length_dependent, std::optional<bool>(true));
  EXPECT_EQ(r.length_evidence.seq_len, 10);
  EXPECT_EQ(kinds(r), std::vector<std::string>{"length"});
}

TEST(AuditContracts, AFutureLeakIsNotAlsoReportedAsLengthDependence) {
  // y_t = x_t + x_{t+1}: the prefix run differs at its last position only, which the leak explains.
  FunctionTarget t("next", 2, [](const at::Tensor& x, bool) {
    auto nxt = at::constant_pad_nd(x.narrow(1, 1, x.size(1) - 1), {0, 0, 0, 1});
    return x + nxt;
  });
  auto r = run_causality_audit(t, small(10));
  EXPECT_EQ(r.leak_horizon, 1);
  EXPECT_EQ(r.length_dependent, std::optional<bool>(false));
  EXPECT_EQ(kinds(r), std::vector<std::string>{"future"});
  auto o = small(10);
  o.lookahead = 1;
  auto within = run_causality_audit(t, o);
  EXPECT_TRUE(within.violations.empty());
  EXPECT_EQ(within.verdict(), Verdict::kCausal);
  EXPECT_EQ(within.leak_horizon, 1);
}

TEST(AuditContracts, Float64ForwardFailureFallsBackToFloat32WithANote) {
  // Converts to float64 (to_dtype succeeds) but its forward refuses float64, like a trace with
  // float32 constants baked in; float32 rounding cross-talk forces the float64 attempt.
  FunctionTarget t("f32-only", 2, [](const at::Tensor& x, bool) {
    if (x.scalar_type() == at::kDouble) throw InputError("expected scalar type Double but found Float");
    auto total = x.sum(1, true);
    auto suffix = x.flip({1}).cumsum(1).flip({1});
    auto n = at::arange(1, x.size(1) + 1, x.options()).view({1, -1, 1});
    return (total - suffix + x) / n;
  });
  auto r = run_causality_audit(t, small(16));
  EXPECT_EQ(r.verdict(), Verdict::kCausal);
  EXPECT_EQ(r.precision, "float32");
  ASSERT_FALSE(r.notes.empty());
  EXPECT_NE(r.notes.front().find("forward failed in float64"), std::string::npos) << r.notes.front();
}

TEST(AuditContracts, PrefixScheduleCoversShortLengthsAndSpreadsLongOnes) {
  EXPECT_EQ(prefix_schedule(2), std::vector<int64_t>{});
  EXPECT_EQ(prefix_schedule(5), (std::vector<int64_t>{2, 3, 4}));
  auto long_one = prefix_schedule(256);
  EXPECT_EQ(long_one.size(), 32u);
  EXPECT_EQ(long_one.front(), 2);
  EXPECT_EQ(long_one.back(), 255);
  EXPECT_TRUE(std::is_sorted(long_one.begin(), long_one.end()));
}

RC_GTEST_PROP(AuditContracts, SlidingWindowPastHorizonAndWindowContract, ()) {
  // A band mask over x_{t-W+1} .. x_t has past horizon min(W, L) - 1; declaring that window
  // holds, declaring one less is a window violation, and the future stays clean.
  const int64_t L = *rc::gen::inRange<int64_t>(3, 14);
  const int64_t W = *rc::gen::inRange<int64_t>(1, L + 2);
  FunctionTarget t("band", 2, [W](const at::Tensor& x, bool) { return mix(x, sliding_window_causal_mask(x.size(1), W)); });
  AuditOptions o = small(L);
  o.seq_lens = {L};
  o.window = W;
  auto r = run_causality_audit(t, o);
  RC_ASSERT(r.past_horizon == std::optional<int64_t>(std::min(W, L) - 1));
  RC_ASSERT(r.violations.empty());
  if (W >= 2 && W <= L) {
    o.window = W - 1;
    auto over = run_causality_audit(t, o);
    RC_ASSERT(kinds(over) == std::vector<std::string>{"window"});
    RC_ASSERT(over.violations.front().horizon == W - 1);
  }
}

// Probe passes are not checked for NaN/Inf on their own (a pass over the whole output costs a
// tenth of a forward): the difference from the checked base decides, and a non-finite difference
// sends the output to the full check. A model whose NaN appears only in one probe pass, never in
// a base pass, must still get the one-line contract error, in the batch check and in the future
// tables alike (the batch check used to read any InputError as "does not run at this batch size").
TEST(AuditContracts, NaNOnlyInAProbePassIsStillTheContractError) {
  // {rows of the pass that turns NaN, trials}: batch 8 with 2 trials, the batch check's second
  // [8, L] pass (its probe); with 3 trials the future chunks hold 6 rows, the second [6, L] pass
  // is the first future probe after its base.
  for (const auto& [rows, trials] : {std::pair<int64_t, int64_t>{8, 2}, std::pair<int64_t, int64_t>{6, 3}}) {
    SCOPED_TRACE(rows);
    int seen = 0;
    FunctionTarget t("nan-in-probe", 2, [&](const at::Tensor& x, bool) {
      auto y = x.cumsum(1);
      if (x.size(0) == rows && ++seen == 2) y.select(1, x.size(1) - 1).fill_(NAN);  // the second such pass only
      return y;
    });
    AuditOptions o = small(8);
    o.mode = "eval";
    o.trials = trials;
    try {
      run_causality_audit(t, o);
      ADD_FAILURE() << "no error";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("NaN or Inf"), std::string::npos) << e.what();
    }
    EXPECT_GE(seen, 2);
  }
}
