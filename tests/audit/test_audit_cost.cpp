// What an audit spends (audit/audit_cost.h) and the pieces that make it spend less: the floor's
// one-pass jitter (the same bits as the ATen expression) and the dtype twins (the same values as
// a fresh conversion, memory reused).
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "audit/audit_cost.h"
#include "audit/audit_prober.h"
#include "audit/causality_audit.h"
#include "audit/dtype_twins.h"
#include "function_target.h"

using namespace grassaudit;
using grassaudit::testing::FunctionTarget;

TEST(AuditCost, SectionsAreExclusiveAndNestedAuditsAddToTheOpenSection) {
  CostMeter outer;
  {
    const CostScope scope(outer);
    const CostSection length("length");
    record_forward(at::kFloat, 2, 10);
    {
      const CostSection floor("precision_floor");
      record_forward(at::kDouble, 2, 16);
      record_forward(at::kDouble, 2, 16);
      record_conversion();
    }
    CostMeter inner;  // a nested audit (the structural pass's)
    {
      const CostScope nested(inner);
      const CostSection future("future");
      record_forward(at::kFloat, 32, 16);
    }
    EXPECT_EQ(inner.total().total().passes, 1);
  }
  record_forward(at::kFloat, 1, 1);  // no meter installed: nothing recorded
  ASSERT_EQ(outer.sections().size(), 2u);
  const SectionCost& length = outer.sections()[0];
  const SectionCost& floor = outer.sections()[1];
  EXPECT_EQ(length.name, "length");
  EXPECT_EQ(floor.name, "precision_floor");
  EXPECT_EQ(floor.forwards.by_dtype.at("float64").passes, 2);
  EXPECT_EQ(floor.forwards.by_dtype.at("float64").tokens, 64);
  EXPECT_EQ(floor.forwards.conversions, 1);
  EXPECT_EQ(floor.forwards.by_dtype.count("float32"), 0u);
  // The length check's own forward and the nested audit's, not the floor's.
  EXPECT_EQ(length.forwards.by_dtype.at("float32").passes, 2);
  EXPECT_EQ(length.forwards.by_dtype.at("float32").tokens, 20 + 512);
  EXPECT_EQ(length.forwards.conversions, 0);
  EXPECT_EQ(outer.total().total().passes, 4);
  EXPECT_EQ(outer.total().conversions, 1);
  EXPECT_GE(length.seconds, 0.0);
}

TEST(AuditCost, JitterInOnePassIsTheAtenExpressionBitForBit) {
  for (auto dtype : {at::kDouble, at::kFloat}) {
    auto gen = at::make_generator<at::CPUGeneratorImpl>(7);
    // Long enough to be split over threads, odd to leave a tail.
    const auto o = at::randn({100003}, gen, at::TensorOptions().dtype(dtype)) * 3;
    const auto d = at::randn({100003}, gen, at::TensorOptions().dtype(dtype));
    for (double s : {-16 * 2e-7, -2e-7, 0.0, 6e-7, 32 * 1e-6}) {
      const auto expected = o * (1 + s * d);
      auto p = at::empty_like(o);
      write_jittered(p, o, d, s);
      EXPECT_TRUE(at::equal(p, expected)) << c10::toString(dtype) << " s=" << s;
    }
    // A layout the one-pass path does not take: the ATen ops, the same values.
    const auto ot = o.narrow(0, 0, 100000).view({400, 250}).t(), dt = d.narrow(0, 0, 100000).view({400, 250}).t();
    auto pt = at::empty({400, 250}, o.options()).t();
    write_jittered(pt, ot, dt, 3e-7);
    EXPECT_TRUE(at::equal(pt, ot * (1 + 3e-7 * dt))) << c10::toString(dtype) << " transposed";
  }
}

TEST(AuditCost, DtypeTwinsGiveFreshConversionValuesAndReuseTheirMemory) {
  DtypeTwins twins;
  auto gen = at::make_generator<at::CPUGeneratorImpl>(3);
  at::Tensor p = at::randn({64, 33}, gen, at::TensorOptions().dtype(at::kFloat));
  const at::Tensor original = p.clone();
  const void* own_memory = p.data_ptr();
  p.set_data(twins.convert("w", p, at::kDouble));
  EXPECT_TRUE(at::equal(p, original.to(at::kDouble)));
  const void* f64_memory = p.data_ptr();
  p.mul_(1.5);  // changed in place while in float64 (a redrawn zero, a jitter)
  const at::Tensor changed = p.clone();
  p.set_data(twins.convert("w", p, at::kFloat));
  EXPECT_EQ(p.data_ptr(), own_memory);  // the model's own memory back
  EXPECT_TRUE(at::equal(p, changed.to(at::kFloat)));
  p.set_data(twins.convert("w", p, at::kDouble));
  EXPECT_EQ(p.data_ptr(), f64_memory);  // one float64 copy, reused
  EXPECT_TRUE(at::equal(p, changed.to(at::kFloat).to(at::kDouble)));
  EXPECT_EQ(twins.convert("w", p, at::kDouble).data_ptr(), p.data_ptr());  // already there: itself
}

TEST(AuditCost, TheJsonAndSummarySayWhatTheAuditRan) {
  // A causal model whose float32 tables are exact zeros: the screen runs the first trial only.
  FunctionTarget t("cumsum", 3, [](const at::Tensor& x, bool) { return at::cumsum(x, 1); });
  AuditOptions o = grassaudit::testing::audit_options(64, 3);
  const AuditResult screened = run_causality_audit(t, o);
  o.screen = false;
  const AuditResult every_row = run_causality_audit(t, o);
  EXPECT_EQ(screened.verdict, every_row.verdict);
  EXPECT_EQ(screened.leak_map, every_row.leak_map);
  const auto js = to_json(screened), je = to_json(every_row);
  const auto& f = js["forwards"];
  EXPECT_EQ(f["unit"]["rows"], o.batch);
  EXPECT_EQ(f["unit"]["seq_len"], 64);
  int64_t passes = 0;
  for (const auto& [name, c] : f["by_check"].items()) passes += c["passes"].get<int64_t>();
  EXPECT_EQ(passes, f["passes"].get<int64_t>());  // every pass is some check's
  EXPECT_TRUE(f["by_check"].contains("future"));
  EXPECT_TRUE(js["seconds_by_check"].contains("future"));
  // The future tables of the screened audit ran one trial of three (plus each table's base pass
  // and the last pass's padding).
  const double fut_s = f["by_check"]["future"]["forward_equivalents"].get<double>();
  const double fut_e = je["forwards"]["by_check"]["future"]["forward_equivalents"].get<double>();
  EXPECT_LT(fut_s * 2, fut_e);
  EXPECT_NE(summarize(screened).find("forward-equivalents of [" + std::to_string(o.batch) + ", 64]"),
            std::string::npos);
}
