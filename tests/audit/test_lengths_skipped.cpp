// Lengths of the audit's schedule where a model does not run (it raises, or returns NaN or Inf)
// are skipped with their reason, not refused; the length asked for failing is refused.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "audit/causality_audit.h"
#include "function_target.h"
#include "util/error.h"

namespace grassaudit {
namespace {

using testing::audit_options;
using testing::FunctionTarget;

// x [B, L, C] -> y [B, L, C]: y_t = x_t + 0.5 x_{t-1} (causal), plus 0.25 x_{t+1} when leaky.
at::Tensor neighbours(const at::Tensor& x, bool leaky) {
  const int64_t L = x.size(1);
  auto y = x.clone();
  y.narrow(1, 1, L - 1).add_(x.narrow(1, 0, L - 1), 0.5);
  if (leaky) y.narrow(1, 0, L - 1).add_(x.narrow(1, 1, L - 1), 0.25);
  return y;
}

// A model traced with a fixed top-k (k = 4) raises below L 4.
at::Tensor topk_like(const at::Tensor& x, bool) {
  if (x.size(1) < 4) throw InputError("model.pt: forward failed at L=" + std::to_string(x.size(1)) +
                                      ": selected index k out of range");
  return neighbours(x, false);
}

// A model whose position scaling divides by (L - 8): NaN or Inf at and below L 8 (and leaky).
at::Tensor nan_below_9(const at::Tensor& x, bool) {
  const double s = std::log(static_cast<double>(x.size(1)) - 8.0);
  return neighbours(x, true) * s;
}

TEST(LengthsSkipped, ALengthWhereTheModelRaisesIsSkippedWithItsReason) {
  FunctionTarget target("topk-4", 4, topk_like);
  const AuditResult r = run_causality_audit(target, audit_options(16, 4));
  EXPECT_EQ(r.verdict(), Verdict::kCausal);
  EXPECT_EQ(r.seq_lens, (std::vector<int64_t>{16, 15, 8, 4}));
  ASSERT_EQ(r.lengths_skipped.size(), 1u);
  EXPECT_EQ(r.lengths_skipped[0].length, 2);
  EXPECT_NE(r.lengths_skipped[0].reason.find("selected index k out of range"), std::string::npos);
  const auto j = to_json(r);
  ASSERT_TRUE(j.contains("lengths_skipped"));
  EXPECT_EQ(j["lengths_skipped"][0]["length"], 2);
  EXPECT_EQ(j["lengths_probed"]["lengths"], nlohmann::json({16, 15, 8, 4}));
  const std::string s = summarize(r);
  EXPECT_NE(s.find("skipped where the model does not run"), std::string::npos) << s;
  EXPECT_NE(s.find("L 2: model.pt: forward failed at L=2"), std::string::npos) << s;
}

TEST(LengthsSkipped, NaNAtSomeLengthsIsSkippedAndNamedAsAFinding) {
  FunctionTarget target("nan-below-9", 4, nan_below_9);
  const AuditResult r = run_causality_audit(target, audit_options(16, 4));
  EXPECT_EQ(r.verdict(), Verdict::kLeaky);
  EXPECT_EQ(r.leak_horizon, 1);
  EXPECT_EQ(r.seq_lens, (std::vector<int64_t>{16, 15}));
  std::vector<int64_t> skipped;
  for (const auto& k : r.lengths_skipped) {
    skipped.push_back(k.length);
    EXPECT_EQ(k.reason, "NaN or Inf outputs");
  }
  std::sort(skipped.begin(), skipped.end());
  EXPECT_EQ(skipped, (std::vector<int64_t>{2, 4, 8}));
  bool noted = false;
  for (const auto& n : r.notes) noted = noted || n.find("returns NaN or Inf at L") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(LengthsSkipped, TheLengthAskedForFailingIsRefused) {
  FunctionTarget raises("topk-4", 4, topk_like);
  EXPECT_THROW(run_causality_audit(raises, audit_options(3, 2)), InputError);
  FunctionTarget nan("nan-below-9", 4, nan_below_9);
  try {
    run_causality_audit(nan, audit_options(8, 2));
    ADD_FAILURE() << "audited a model that returns NaN at the length asked for";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("NaN or Inf"), std::string::npos) << e.what();
  }
}

TEST(LengthsSkipped, AModelThatRunsEverywhereSkipsNothingAndCostsTheSame) {
  FunctionTarget everywhere("neighbours", 4, [](const at::Tensor& x, bool) { return neighbours(x, false); });
  const AuditResult all = run_causality_audit(everywhere, audit_options(16, 4));
  EXPECT_TRUE(all.lengths_skipped.empty());
  EXPECT_FALSE(to_json(all).contains("lengths_skipped"));
  EXPECT_EQ(summarize(all).find("skipped"), std::string::npos);
  // The skip costs what the attempt cut short spent: more forwards than the same audit over the
  // lengths that run, never fewer.
  FunctionTarget topk("topk-4", 4, topk_like);
  const AuditResult skipping = run_causality_audit(topk, audit_options(16, 4));
  AuditOptions runnable = audit_options(16, 4);
  runnable.seq_lens = {16, 15, 8, 4};
  const AuditResult direct = run_causality_audit(everywhere, runnable);
  EXPECT_EQ(skipping.leak_horizon, direct.leak_horizon);
  EXPECT_GT(skipping.forwards.total().passes, direct.forwards.total().passes);
}

}  // namespace
}  // namespace grassaudit
