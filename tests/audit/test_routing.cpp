// Discrete routing: the ops watch sees selections over time and nothing else, the search finds the
// horizon a selection hides from the tables, and a search the budget ends is a lower bound that
// proves no contract (checks/routing_search.h); the routing suite (audits/routing.json: expert
// choice, capacity queues, block selection, top-k attention, sort bucketing, each with its twin)
// matches its float64 brute force.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "audit/audit_suite.h"
#include "audit/causality_audit.h"
#include "audit/op_watch.h"
#include "formats/model_file.h"
#include "function_target.h"

using namespace grassaudit;
using grassaudit::testing::FunctionTarget;

namespace {

bool watched(const std::vector<DiscreteOp>& ops, const std::string& name, int64_t dim) {
  return std::any_of(ops.begin(), ops.end(), [&](const DiscreteOp& o) { return o.op == name && o.dim == dim; });
}

// y_t = x_t scaled up where channel 0 of x peaks over the whole sequence: every output reads every
// position, but only through the argmax, which a replacement moves now and then.
at::Tensor scaled_at_the_peak(const at::Tensor& x, bool) {
  const int64_t L = x.size(1);
  const at::Tensor peak = x.select(2, 0).argmax(1, true);                                    // [B, 1]
  const at::Tensor at_peak = at::arange(L, x.options().dtype(at::kLong)).view({1, L}).eq(peak);  // [B, L]
  const at::Tensor peak_value = (x.select(2, 1) * at_peak.to(x.scalar_type())).sum(1, true);      // [B, 1]
  return x + peak_value.unsqueeze(-1) * 0.5;
}

// The sequence sorted over time by channel 0 and put back: y = x, with a sort in the graph.
at::Tensor sorted_and_restored(const at::Tensor& x, bool) {
  const at::Tensor order = at::argsort(x.select(2, 0), 1, false);                 // [B, L]
  const at::Tensor idx = order.unsqueeze(-1).expand_as(x);
  const at::Tensor sorted = x.gather(1, idx);
  return at::zeros_like(x).scatter(1, idx, sorted) * 2.0;
}

}  // namespace

TEST(OpWatch, SeesSelectionsOverTheTimeAxisOnly) {
  const at::Tensor x = at::randn({2, 16, 4});
  std::vector<DiscreteOp> ops;
  {
    OpWatch watch(16);
    at::topk(x, 4, 1);
    at::max(x);           // a value, no index
    at::max(x, 2);        // over channels, not time
    at::argmax(x, -1);    // over channels: no selection over time, but an index made
    at::cumsum(x, 1);     // over time after an argmax: a queue
    at::sort(x, 1);
    ops = watch.ops();
  }
  EXPECT_TRUE(watched(ops, "aten::topk", 1));
  EXPECT_TRUE(watched(ops, "aten::sort", 1));
  EXPECT_TRUE(watched(ops, "aten::cumsum", 1));
  EXPECT_FALSE(watched(ops, "aten::argmax", 2));
  EXPECT_FALSE(watched(ops, "aten::max", 2));
  EXPECT_FALSE(watched(ops, "aten::max", -1));
  {
    OpWatch watch(16);
    const at::Tensor positions = at::arange(16, at::kLong).view({1, 16, 1}).expand({2, 16, 4});
    at::gather(x, 1, positions);                      // positions alone: the same in every row
    at::gather(x, 1, positions.contiguous());         // materialised, still the same in every row
    EXPECT_FALSE(watched(watch.ops(), "aten::gather", 1));
    at::gather(x, 1, at::argsort(x, 1, false));       // computed from x: the rows differ
    EXPECT_TRUE(watched(watch.ops(), "aten::gather", 1));
  }
  OpWatch after(16);
  at::topk(x, 4, 1);
  EXPECT_TRUE(watched(after.ops(), "aten::topk", 1));
  at::cumsum(x, 1);  // no argmax or one_hot under this watch: a running sum, not a queue
  EXPECT_FALSE(watched(after.ops(), "aten::cumsum", 1));
}

TEST(RoutingSearch, FindsTheHorizonTheTablesMiss) {
  const int64_t L = 32;
  FunctionTarget target("scaled at the peak", 2, scaled_at_the_peak);
  AuditOptions o = grassaudit::testing::audit_options(L, 3);
  o.mode = "eval";
  const AuditResult r = run_causality_audit(target, o);
  ASSERT_TRUE(r.discrete_routing.has_value());
  const nlohmann::json j = to_json(r);
  EXPECT_EQ(j["discrete_routing"]["ops"][0]["op"], "aten::argmax") << j["discrete_routing"].dump();
  EXPECT_EQ(r.leak_horizon, L - 1) << summarize(r);
  EXPECT_EQ(r.past_horizon, L - 1) << summarize(r);
  EXPECT_EQ(j["horizon_bound"], "exact");
  EXPECT_TRUE(r.leaky());

  // The same model with a budget too small for the search: the tables' horizon, a lower bound.
  o.routing_budget = 1;
  const AuditResult cut = run_causality_audit(target, o);
  EXPECT_LT(cut.leak_horizon, L - 1) << "the tables alone found the horizon: the search proves nothing here";
  EXPECT_TRUE(cut.horizon_lower_bound);
  EXPECT_EQ(to_json(cut)["horizon_bound"], "lower");
  EXPECT_NE(summarize(cut).find("is a lower bound"), std::string::npos) << summarize(cut);
}

TEST(RoutingSearch, ABoundIsNeverAPass) {
  const int64_t L = 16;
  FunctionTarget target("sorted and restored", 2, sorted_and_restored);
  AuditOptions o = grassaudit::testing::audit_options(L, 3);
  o.mode = "eval";
  const AuditResult whole = run_causality_audit(target, o);
  ASSERT_TRUE(whole.discrete_routing.has_value());
  EXPECT_FALSE(whole.leaky()) << summarize(whole);
  EXPECT_FALSE(whole.horizon_lower_bound);
  EXPECT_EQ(whole.leak_horizon, 0);

  o.routing_budget = 64;  // two positions of one round
  const AuditResult cut = run_causality_audit(target, o);
  EXPECT_EQ(cut.leak_horizon, 0);
  EXPECT_TRUE(cut.horizon_lower_bound);
  ASSERT_TRUE(cut.leaky()) << summarize(cut);
  ASSERT_EQ(cut.violations.size(), 1u);
  EXPECT_EQ(cut.violations[0].kind, ViolationKind::kUnproven);
  EXPECT_NE(summarize(cut).find("NOT PROVEN"), std::string::npos) << summarize(cut);

  o.window = 4;  // the past side too: its bound proves no window
  o.lookahead = 0;
  const AuditResult windowed = run_causality_audit(target, o);
  EXPECT_TRUE(windowed.past_horizon_lower_bound);
  const nlohmann::json j = to_json(windowed);
  EXPECT_EQ(j["past_horizon_bound"], "lower");
}

TEST(AuditSuite, RoutingControlsMatchBruteForce) {
  AuditOptions o;
  auto results = run_audit_suite(std::string(GRASSAUDIT_SOURCE_DIR) + "/audits/routing.json", o, open_model_file);
  ASSERT_GE(results.size(), 24u);
  for (const auto& r : results) EXPECT_TRUE(r.pass) << r.name << ": " << r.detail;
}
