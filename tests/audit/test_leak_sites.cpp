// Where the leak enters (checks/localise_check.cpp) against a target whose units are small
// functions of the time axis (a tree of them, as a module's submodules are): the helpers of
// audit/unit_probe.h, and the sites named for each placement of a leak.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "audit/causality_audit.h"
#include "audit/unit_probe.h"
#include "function_target.h"

namespace grassaudit {
namespace {

using Fn = std::function<at::Tensor(const at::Tensor&)>;  // [R, L, C] -> [R, L, C]

Fn identity() {
  return [](const at::Tensor& x) { return x; };
}
// y_t = x_t + x_{t+D}: reads D ahead.
Fn ahead(int64_t D) {
  return [D](const at::Tensor& x) {
    const int64_t L = x.size(1);
    if (D >= L) return x.clone();
    return x + at::cat({x.narrow(1, D, L - D), at::zeros_like(x.narrow(1, 0, D))}, 1);
  };
}
// A running sum: reads the whole past, no future.
Fn running() {
  return [](const at::Tensor& x) { return x.cumsum(1); };
}
// Each value scaled by the sequence's length: every position depends on how many follow.
Fn by_length() {
  return [](const at::Tensor& x) { return x * static_cast<double>(x.size(1)); };
}
// Each row plus the batch's mean at each position: rows mix, time does not (a row alone is
// doubled, so what reaches the output from before still shows).
Fn batch_mixed() {
  return [](const at::Tensor& x) { return x + x.mean(0, /*keepdim=*/true); };
}

// A unit: `pre`, then its children in order, then `post`.
struct Node {
  std::string path;
  int parent;
  Fn pre, post;
};

class TreeTarget : public AuditTarget, public UnitProbe {
 public:
  explicit TreeTarget(std::vector<Node> nodes) : nodes_(std::move(nodes)) {
    for (const auto& n : nodes_) units_.push_back({n.path, "Node", std::nullopt, std::nullopt, n.parent});
  }
  std::string describe() const override { return "tree"; }
  InputSpec input() const override {
    InputSpec s;
    s.kind = InputSpec::Kind::kFeatures;
    s.size = 2;
    return s;
  }
  at::Tensor forward(const at::Tensor& x) override { return run(x, {}, {})[0].outputs[0]; }
  void set_train(bool t) override { training_ = t; }
  bool is_training() const override { return training_; }
  bool to_dtype(at::ScalarType d, std::string*) override {
    dtype_ = d;
    return true;
  }
  at::ScalarType dtype() const override { return dtype_; }
  UnitProbe* unit_probe() override { return offer_ ? this : nullptr; }

  const std::vector<ProbeUnit>& units() override { return units_; }
  std::vector<UnitValues> run(const at::Tensor& x, const UnitTensors& fed, const UnitTensors& held) override {
    std::vector<UnitValues> v(nodes_.size());
    eval(0, x, fed, held, v);
    return v;
  }
  bool offer_ = true;

 private:
  at::Tensor eval(int u, const at::Tensor& x, const UnitTensors& fed, const UnitTensors& held,
                  std::vector<UnitValues>& v) {
    const auto f = fed.find(u);
    const at::Tensor in = u != 0 && f != fed.end() ? f->second[0] : x;
    at::Tensor h = nodes_[static_cast<size_t>(u)].pre(in);
    for (size_t c = 0; c < nodes_.size(); ++c)
      if (nodes_[c].parent == u) h = eval(static_cast<int>(c), h, fed, held, v);
    h = nodes_[static_cast<size_t>(u)].post(h);
    const auto k = held.find(u);
    if (k != held.end()) h = k->second[0];
    v[static_cast<size_t>(u)] = UnitValues{true, {in}, {h}};
    return h;
  }
  std::vector<Node> nodes_;
  std::vector<ProbeUnit> units_;
  bool training_ = false;
  at::ScalarType dtype_ = at::kFloat;
};

std::vector<std::string> site_paths(const AuditResult& r) {
  std::vector<std::string> out;
  if (r.leak_sites)
    for (const auto& s : *r.leak_sites) out.push_back(s.path);
  return out;
}

AuditResult audit(TreeTarget& t) { return run_causality_audit(t, grassaudit::testing::audit_options(12, 2)); }

TEST(LeakSiteHelpers, TimeAxesAreTheAxesThatFollowTheLength) {
  EXPECT_EQ(time_axes({4, 12, 3}, {4, 6, 3}, 12, 6), (std::vector<int64_t>{1}));
  EXPECT_EQ(time_axes({4, 12, 12}, {4, 6, 6}, 12, 6), (std::vector<int64_t>{1, 2}));  // an attention map
  EXPECT_TRUE(time_axes({4, 14, 3}, {4, 8, 3}, 12, 6).empty());                       // padded by 2
  EXPECT_TRUE(time_axes({4, 12, 12}, {4, 6, 12}, 12, 6).empty() == false);
  EXPECT_EQ(time_axes({4, 12, 12}, {4, 6, 12}, 12, 6), (std::vector<int64_t>{1}));  // 12 channels stay channels
  EXPECT_EQ(time_axes({12, 12}, {}, 12, 0), (std::vector<int64_t>{1}));             // no second shape: size L
}

TEST(LeakSiteHelpers, FedAtTheCutIsTheProbeFromTheCutOn) {
  const auto a = at::zeros({2, 5, 1});
  const auto b = at::ones({2, 5, 1});
  const auto cuts = at::tensor(std::vector<int64_t>{2, 4}, at::kLong);
  const auto fed = fed_at_cut(a, b, {1}, cuts);
  EXPECT_EQ(fed.squeeze(-1)[0].sum().item<double>(), 3);  // positions 2, 3, 4
  EXPECT_EQ(fed.squeeze(-1)[1].sum().item<double>(), 1);  // position 4
  const auto held = held_before_cut(b, a, {1}, cuts);  // before the cut: the base's
  EXPECT_TRUE(at::equal(held, fed));
  const auto e = effect_before_cut(b, a.add(1).mul(2), {1}, cuts, 5);  // |1 - 2| / 2
  EXPECT_DOUBLE_EQ(e[0][1].item<double>(), 0.5);
  EXPECT_DOUBLE_EQ(e[0][2].item<double>(), 0.0);  // at the cut: not compared
}

TEST(LeakSites, TheUnitThatReadsAheadIsNamedAndNotTheOthers) {
  TreeTarget t({{"", -1, identity(), identity()}, {"first", 0, ahead(1), identity()}, {"second", 0, running(), identity()}});
  const AuditResult r = audit(t);
  ASSERT_TRUE(r.leaky());
  EXPECT_EQ(site_paths(r), (std::vector<std::string>{"first"}));
  EXPECT_EQ(r.leak_sites->front().horizon, 1);
}

TEST(LeakSites, TwoIndependentSitesAreBothNamedWithTheirOwnHorizons) {
  TreeTarget t({{"", -1, identity(), identity()}, {"first", 0, ahead(1), identity()}, {"second", 0, ahead(3), identity()}});
  const AuditResult r = audit(t);
  ASSERT_EQ(site_paths(r), (std::vector<std::string>{"first", "second"}));
  EXPECT_EQ((*r.leak_sites)[0].horizon, 1);
  EXPECT_EQ((*r.leak_sites)[1].horizon, 3);
}

TEST(LeakSites, TheModelsOwnCodeIsTheRootWhenNoUnitExplainsIt) {
  TreeTarget t({{"", -1, identity(), ahead(2)}, {"first", 0, running(), identity()}});
  const AuditResult r = audit(t);
  EXPECT_EQ(site_paths(r), (std::vector<std::string>{""}));
  EXPECT_EQ(r.leak_sites->front().horizon, 2);
}

TEST(LeakSites, ASiteInsideAnotherIsTheOnlyOneNamedUnlessTheOuterReadsAheadToo) {
  TreeTarget inner_only({{"", -1, identity(), identity()},
                         {"outer", 0, running(), identity()},
                         {"outer.inner", 1, ahead(1), identity()}});
  EXPECT_EQ(site_paths(audit(inner_only)), (std::vector<std::string>{"outer.inner"}));
  TreeTarget both({{"", -1, identity(), identity()},
                   {"outer", 0, identity(), ahead(2)},
                   {"outer.inner", 1, ahead(1), identity()}});
  EXPECT_EQ(site_paths(audit(both)), (std::vector<std::string>{"outer", "outer.inner"}));
}

TEST(LeakSites, NotLookedForOnACausalModelOrWhenTurnedOff) {
  TreeTarget causal({{"", -1, identity(), identity()}, {"first", 0, running(), identity()}});
  const AuditResult c = audit(causal);
  EXPECT_FALSE(c.leaky());
  EXPECT_FALSE(c.leak_sites.has_value());
  TreeTarget leaky({{"", -1, identity(), identity()}, {"first", 0, ahead(1), identity()}});
  AuditOptions o = grassaudit::testing::audit_options(12, 2);
  o.localise = false;
  EXPECT_FALSE(run_causality_audit(leaky, o).leak_sites.has_value());
  leaky.offer_ = false;  // a target that cannot be looked inside: one line, the verdict stands
  const AuditResult n = audit(leaky);
  EXPECT_TRUE(n.leaky());
  EXPECT_FALSE(n.leak_sites.has_value());
  bool said = false;
  for (const auto& note : n.notes) said = said || note.rfind("leak sites: not looked for", 0) == 0;
  EXPECT_TRUE(said);
}

TEST(LeakSiteHelpers, RowsMixedKeepTheKeptRowsAndMeasureOnlyThem) {
  const auto a = at::zeros({4, 3, 1});
  const auto b = at::ones({4, 3, 1});
  const auto keep = at::arange(4, at::kLong).remainder(2).eq(0);
  const auto m = rows_mixed(a, b, keep);
  EXPECT_EQ(m.sum().item<double>(), 6);  // rows 1 and 3 from b
  EXPECT_EQ(m[0].sum().item<double>(), 0);
  EXPECT_DOUBLE_EQ(effect_in_kept_rows(m, a, keep), 0.0);                 // only the other rows moved
  EXPECT_DOUBLE_EQ(effect_in_kept_rows(b.mul(3), b.mul(2), keep), 0.5);  // |3 - 2| / 2
}

TEST(LeakSites, TheUnitThatMixesTheRowsIsNamedForTheBatchCoupling) {
  TreeTarget t({{"", -1, identity(), identity()}, {"first", 0, running(), identity()}, {"norm", 0, batch_mixed(), identity()}});
  const AuditResult r = audit(t);
  ASSERT_TRUE(r.batch_coupled.value_or(false));
  ASSERT_EQ(site_paths(r), (std::vector<std::string>{"norm"}));
  EXPECT_EQ(r.leak_sites->front().violation, ViolationKind::kBatch);
}

TEST(LeakSites, ARowMixingUnitIsNotNamedForTheFutureAndTheReaderAheadIs) {
  // Rows mix in "norm" and "first" reads one ahead: each violation names its own unit, and the
  // future's probe runs one row at a time, so the mixing reads as no future leak of "norm".
  TreeTarget t({{"", -1, identity(), identity()}, {"first", 0, ahead(1), identity()}, {"norm", 0, batch_mixed(), identity()}});
  const AuditResult r = audit(t);
  ASSERT_TRUE(r.leaky());
  ASSERT_TRUE(r.leak_sites.has_value());
  std::vector<std::pair<std::string, ViolationKind>> got;
  for (const auto& s : *r.leak_sites) got.emplace_back(s.path, s.violation);
  EXPECT_EQ(got, (std::vector<std::pair<std::string, ViolationKind>>{{"first", ViolationKind::kFuture},
                                                                      {"norm", ViolationKind::kBatch}}));
}

TEST(LeakSites, TheUnitThatReadsTheLengthIsNamedForTheLengthDependence) {
  TreeTarget t({{"", -1, identity(), identity()}, {"first", 0, running(), identity()}, {"scale", 0, by_length(), identity()}});
  const AuditResult r = audit(t);
  ASSERT_TRUE(r.length_dependent.value_or(false));
  ASSERT_EQ(site_paths(r), (std::vector<std::string>{"scale"}));
  EXPECT_EQ(r.leak_sites->front().violation, ViolationKind::kLength);
}

}  // namespace
}  // namespace grassaudit
