// The audit's enums and the names it records: the JSON, the summary and the suites read the
// strings, so verdict_name / violation_kind_name / mode_name give exactly those, and the parsers
// read them back (anything else is one InputError line).
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "audit/causality_audit.h"
#include "function_target.h"
#include "util/error.h"

using namespace grassaudit;
using grassaudit::testing::FunctionTarget;

namespace {
AuditOptions opts(int64_t L) { return grassaudit::testing::audit_options(L, 2); }
at::Tensor next_position(const at::Tensor& x) {  // out_t = x_{t+1} (0 at the end): horizon 1
  const int64_t L = x.size(1);
  return at::constant_pad_nd(x.narrow(1, 1, L - 1), {0, 0, 0, 1}, 0.0);
}
}  // namespace

TEST(AuditNames, VerdictKindAndModeNamesAreTheRecordedStrings) {
  EXPECT_STREQ(verdict_name(Verdict::kCausal), "causal");
  EXPECT_STREQ(verdict_name(Verdict::kLeaky), "leaky");
  EXPECT_STREQ(mode_name(AuditMode::kEval), "eval");
  EXPECT_STREQ(mode_name(AuditMode::kTrain), "train");
  const char* kinds[] = {"future", "length", "batch", "window", "structural", "incremental"};
  for (const char* k : kinds) EXPECT_STREQ(violation_kind_name(parse_violation_kind(k)), k);
  EXPECT_EQ(parse_verdict("leaky"), Verdict::kLeaky);
  EXPECT_EQ(parse_verdict("causal"), Verdict::kCausal);
  EXPECT_THROW(parse_verdict("Leaky"), InputError);
  EXPECT_THROW(parse_violation_kind("futur"), InputError);
}

TEST(AuditNames, AnAuditedResultCarriesTheDecidedVerdict) {
  FunctionTarget leaky("next-position", 2, [](const at::Tensor& x, bool) { return next_position(x); });
  auto r = run_causality_audit(leaky, opts(8));
  EXPECT_EQ(r.verdict(), Verdict::kLeaky);
  EXPECT_EQ(to_json(r)["verdict"], "leaky");
  EXPECT_TRUE(r.leaky());
  ASSERT_TRUE(r.gradient.ran);
  EXPECT_EQ(r.gradient.verdict(), Verdict::kLeaky);

  FunctionTarget causal("identity", 2, [](const at::Tensor& x, bool) { return x * 2.0; });
  auto c = run_causality_audit(causal, opts(8));
  EXPECT_EQ(c.verdict(), Verdict::kCausal);
  EXPECT_EQ(to_json(c)["verdict"], "causal");
  EXPECT_FALSE(c.leaky());
  EXPECT_EQ(c.gradient.verdict(), Verdict::kCausal);
}

TEST(AuditNames, AResultNotYetAuditedReadsAsCausal) {
  AuditResult none;
  EXPECT_EQ(none.verdict(), Verdict::kCausal);
  EXPECT_FALSE(none.leaky());
}

TEST(AuditNames, ModesAreRecordedByNameInTheResultAndTheJson) {
  FunctionTarget leaky("next-position", 2, [](const at::Tensor& x, bool) { return next_position(x); });
  auto o = opts(8);
  o.mode = "train";  // train only
  auto r = run_causality_audit(leaky, o);
  EXPECT_EQ(r.modes, (std::vector<std::string>{"train"}));
  EXPECT_EQ(r.modes_planned, (std::vector<std::string>{"train"}));
  auto j = to_json(r);
  EXPECT_EQ(j["modes"], nlohmann::json::array({"train"}));
  EXPECT_EQ(j["verdict"], "leaky");
  EXPECT_EQ(j["mode_horizons"], (nlohmann::json{{"train", 1}}));
  EXPECT_EQ(j["gradient_check"]["verdict"], "leaky");
}
