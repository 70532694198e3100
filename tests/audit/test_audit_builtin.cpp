// The audit on grassaudit's own mixers, the control suite, and the length schedule.
#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <gtest/gtest.h>

#include "audit/audit_suite.h"
#include "formats/model_file.h"
#include "formats/builtin/builtin_target.h"
#include "audit/causality_audit.h"
#include "util/error.h"

using namespace grassaudit;

namespace {
ModelConfig tiny(const std::string& mixer, std::vector<int64_t> offsets, const std::string& mode, int64_t layers) {
  ModelConfig c;
  c.mixer = mixer;
  c.vocab_size = 40;
  c.d_model = 16;
  c.rank = 4;
  c.layers = layers;
  c.max_len = 32;
  c.heads = 2;
  c.d_ff = 32;
  c.offsets = std::move(offsets);
  c.offset_mode = mode;
  return c;
}
AuditResult audit(const ModelConfig& c, int64_t L, const std::string& output = "hidden") {
  at::manual_seed(3);
  LanguageModel lm(c);
  BuiltinLmTarget target(lm, output);
  AuditOptions o;
  o.seq_len = L;
  o.trials = 2;
  return run_causality_audit(target, o);
}
}  // namespace

TEST(AuditSchedule, LengthsAreDocumented) {
  EXPECT_EQ(audit_length_schedule(128), (std::vector<int64_t>{128, 127, 64, 32, 16, 8, 4, 2}));
  EXPECT_EQ(audit_length_schedule(2), (std::vector<int64_t>{2}));
  EXPECT_EQ(audit_length_schedule(3), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(audit_length_schedule(10), (std::vector<int64_t>{10, 9, 5, 2}));
}

TEST(AuditBuiltin, PastAndAttentionCausalFutureLeaksWithPredictedHorizon) {
  auto past = audit(tiny("past", {1, 2, 4}, "per-layer", 3), 24);
  EXPECT_EQ(past.verdict(), Verdict::kCausal);
  EXPECT_EQ(past.leak_horizon, 0);
  EXPECT_FALSE(past.rounding_only());
  EXPECT_FALSE(past.vacuous);
  EXPECT_TRUE(past.gradient.ran && past.gradient.agrees);

  auto attn = audit(tiny("attention", {1, 2, 4}, "per-layer", 3), 24);
  EXPECT_EQ(attn.verdict(), Verdict::kCausal);
  EXPECT_EQ(attn.max_effect, 0.0);  // masked softmax: exactly zero, not merely small
  EXPECT_TRUE(attn.gradient.agrees);

  auto fut = audit(tiny("future", {1, 2, 4}, "per-layer", 3), 24);
  EXPECT_EQ(fut.verdict(), Verdict::kLeaky);
  EXPECT_EQ(fut.leak_horizon, 7);  // 1 + 2 + 4
  ASSERT_TRUE(fut.first_leaking_cut.has_value());
  EXPECT_EQ(*fut.first_leaking_cut, 1);
  EXPECT_EQ(fut.gradient.verdict(), Verdict::kLeaky);
  EXPECT_EQ(fut.gradient.leak_horizon, 7);
  EXPECT_TRUE(fut.gradient.agrees);
  // Leak map: y_0 depends on x_1 (D = 1) and nothing beyond D = 7.
  EXPECT_GT(fut.leak_map()[0][0], 0.0);
  EXPECT_EQ(fut.leak_map()[0][7], 0.0);

  auto all = audit(tiny("future", {1, 3}, "all", 2), 24);
  EXPECT_EQ(all.leak_horizon, 6);  // layers * max offset
}

TEST(AuditBuiltin, LogitsAndHiddenGiveTheSameVerdict) {
  for (std::string m : {"future", "past"}) {
    auto c = tiny(m, {1, 2}, "per-layer", 2);
    auto h = audit(c, 12, "hidden");
    auto l = audit(c, 12, "logits");
    EXPECT_EQ(h.verdict(), l.verdict()) << m;
    EXPECT_EQ(h.leak_horizon, l.leak_horizon) << m;
  }
}

TEST(AuditBuiltin, AuditLeavesModelDtypeModeAndRngUntouched) {
  at::manual_seed(3);
  LanguageModel lm(tiny("future", {1, 2}, "per-layer", 2));
  lm->train();
  at::manual_seed(77);
  auto expected_next = at::rand({4});
  at::manual_seed(77);
  BuiltinLmTarget target(lm);
  AuditOptions o;
  o.seq_len = 10;
  auto r = run_causality_audit(target, o);  // leaky -> goes through the float64 pass
  EXPECT_EQ(r.precision, "float64");
  EXPECT_TRUE(lm->is_training());
  EXPECT_EQ(lm->parameters().front().scalar_type(), at::kFloat);
  EXPECT_TRUE(at::equal(at::rand({4}), expected_next));
}

TEST(AuditSuite, ControlModelsMatchTheirExpectations) {
  AuditOptions o;
  auto results = run_audit_suite(std::string(GRASSAUDIT_SOURCE_DIR) + "/audits/controls.json", o, open_model_file);
  ASSERT_GE(results.size(), 20u);
  int rounding = 0, leaky = 0;
  for (const auto& r : results) {
    EXPECT_TRUE(r.pass) << r.name << ": " << r.detail;
    rounding += r.rounding_only;
    leaky += r.verdict == "leaky";
  }
  EXPECT_GE(rounding, 2);  // FFT of size 2L and the suffix-cancelled mean: causal, rounding only
  EXPECT_GE(leaky, 10);
}

TEST(AuditErrors, BadOptionsAreInputErrors) {
  at::manual_seed(3);
  LanguageModel lm(tiny("past", {1, 2}, "per-layer", 2));
  BuiltinLmTarget target(lm);
  AuditOptions o;
  o.seq_len = 1;
  EXPECT_THROW(run_causality_audit(target, o), InputError);
  o.seq_len = 8;
  o.trials = 0;
  EXPECT_THROW(run_causality_audit(target, o), InputError);
  EXPECT_THROW(InputSpec::parse("words:5"), InputError);
  EXPECT_THROW(InputSpec::parse("tokens:-3"), InputError);
  EXPECT_THROW(InputSpec::parse("tokens:"), InputError);
  EXPECT_EQ(InputSpec::parse("features:7").size, 7);
}

TEST(AuditBuiltin, AFutureMixerSwitchedOffByZeroWeightsIsStructurallyLeaky) {
  // Every weight of every mixer exactly zero (biases kept): the weights as given read no future
  // (the mixers add constants), one training step later the future pairing reads it again.
  at::manual_seed(3);
  LanguageModel lm(tiny("future", {1, 2, 4}, "per-layer", 3));
  std::vector<at::Tensor> before;
  {
    at::NoGradGuard no_grad;
    for (const auto& p : lm->named_parameters()) {
      if (p.key().find(".mixer.") != std::string::npos && p.key().find("bias") == std::string::npos)
        p.value().zero_();
      before.push_back(p.value().clone());
    }
  }
  BuiltinLmTarget target(lm);
  AuditOptions o;
  o.seq_len = 24;
  o.trials = 2;
  const auto r = run_causality_audit(target, o);
  EXPECT_EQ(r.leak_horizon, 0);  // as given
  ASSERT_TRUE(r.structural.has_value());
  EXPECT_TRUE(r.structural->ran) << r.structural->not_run << r.structural->skipped;
  EXPECT_EQ(r.structural->leak_horizon, 7);  // 1 + 2 + 4, as the random-initialised model
  EXPECT_FALSE(r.structural->tensors.empty());
  EXPECT_EQ(r.verdict(), Verdict::kLeaky);
  ASSERT_FALSE(r.violations.empty());
  EXPECT_EQ(r.violations.back().kind, ViolationKind::kStructural);
  // The zeros are back, bit for bit.
  size_t i = 0;
  for (const auto& p : lm->named_parameters()) EXPECT_TRUE(at::equal(p.value(), before[i++])) << p.key();

  // The past mixer under the same zeros: causal structurally too.
  at::manual_seed(3);
  LanguageModel past(tiny("past", {1, 2, 4}, "per-layer", 3));
  {
    at::NoGradGuard no_grad;
    for (const auto& p : past->named_parameters())
      if (p.key().find(".mixer.") != std::string::npos && p.key().find("bias") == std::string::npos)
        p.value().zero_();
  }
  BuiltinLmTarget past_target(past);
  const auto rp = run_causality_audit(past_target, o);
  ASSERT_TRUE(rp.structural && rp.structural->ran);
  EXPECT_EQ(rp.structural->leak_horizon, 0);
  EXPECT_EQ(rp.verdict(), Verdict::kCausal);
}
