// The property search (audit/property_search.h) through its runner: a leak is found and shrunk
// to its minimal case; a case the model cannot run ends the search with a note, never the audit.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "audit/causality_audit.h"
#include "audit/property_search.h"
#include "function_target.h"
#include "util/error.h"

using namespace grassaudit;
using grassaudit::testing::FunctionTarget;

namespace {

AuditOptions options() {
  AuditOptions o;
  o.seq_len = 12;
  o.trials = 1;
  o.mode = "eval";
  return o;
}

bool has_note_starting(const AuditResult& r, const std::string& prefix) {
  return std::any_of(r.notes.begin(), r.notes.end(), [&](const std::string& n) { return n.rfind(prefix, 0) == 0; });
}

}  // namespace

TEST(PropertySearch, LeakIsFoundAndShrunkToTheSmallestCase) {
  // y_t = x_t + x_{t+2}: the smallest failing case is L=3, cut 1 (y_0 reads x_2).
  FunctionTarget t("reads two ahead", 2, [](const at::Tensor& x, bool) {
    return x + at::constant_pad_nd(x.narrow(1, 2, x.size(1) - 2), {0, 0, 0, 2});
  });
  const AuditOptions o = options();
  AuditResult r = run_causality_audit(t, o);
  run_property_search(t, o, 30, r);
  ASSERT_TRUE(r.counterexample.has_value());
  EXPECT_EQ(r.counterexample->seq_len, 3);
  EXPECT_EQ(r.counterexample->cut, 1);  // inputs from 1 on replaced: y_0 moves
  EXPECT_EQ(r.counterexample->positions.front(), 0);
  EXPECT_EQ(r.verdict(), Verdict::kLeaky);
}

TEST(PropertySearch, CausalModelPassesEveryCase) {
  FunctionTarget t("cumsum", 2, [](const at::Tensor& x, bool) { return x.cumsum(1); });
  const AuditOptions o = options();
  AuditResult r = run_causality_audit(t, o);
  run_property_search(t, o, 30, r);
  EXPECT_FALSE(r.counterexample.has_value());
  EXPECT_TRUE(has_note_starting(r, "property search: 30 cases passed"));
  EXPECT_EQ(r.verdict(), Verdict::kCausal);
}

TEST(PropertySearch, ACaseTheModelCannotRunEndsTheSearchNotTheAudit) {
  // Batch sizes 3 and 5 are refused: the main audit never runs them (pairs and its probe
  // chunks), the search draws batches of 1..8.
  FunctionTarget t("odd batches refused", 2, [](const at::Tensor& x, bool) {
    if (x.size(0) == 3 || x.size(0) == 5) throw InputError("this model refuses batch 3 and 5");
    return x.cumsum(1);
  });
  const AuditOptions o = options();
  AuditResult r = run_causality_audit(t, o);
  ASSERT_EQ(r.verdict(), Verdict::kCausal);
  ASSERT_NO_THROW(run_property_search(t, o, 60, r));
  EXPECT_TRUE(has_note_starting(r, "property search stopped early: the model failed at L="))
      << ::testing::PrintToString(r.notes);
  EXPECT_FALSE(has_note_starting(r, "property search: 60 cases passed"));
  EXPECT_FALSE(r.counterexample.has_value());
  EXPECT_EQ(r.verdict(), Verdict::kCausal);
}

TEST(PropertySearch, WithoutARunnerItIsRefusedBeforeAnyProbe) {
  FunctionTarget t("cumsum", 2, [](const at::Tensor& x, bool) { return x.cumsum(1); });
  const AuditOptions o = options();
  AuditResult r = run_causality_audit(t, o);
  set_property_search_runner(nullptr, "none in this test");
  try {
    run_property_search(t, o, 5, r);
    ADD_FAILURE() << "no InputError";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "--property: no property search here (none in this test)");
  }
  set_property_search_runner(&grassaudit_property_search, "");
  EXPECT_TRUE(has_property_search());
}
