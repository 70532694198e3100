// What an audit spends (audit/audit_cost.h) and the pieces that make it spend less: the floor's
// one-pass jitter (the same bits as the ATen expression) and the dtype twins (the same values as
// a fresh conversion, memory reused).
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "audit/audit_cost.h"
#include "audit/audit_prober.h"
#include "audit/causality_audit.h"
#include "audit/direction_draws.h"
#include "audit/precision_switch.h"
#include "audit/dtype_twins.h"
#include "formats/builtin/builtin_target.h"
#include "function_target.h"

using namespace grassaudit;
using grassaudit::testing::FunctionTarget;

TEST(AuditCost, SectionsAreExclusiveAndNestedAuditsAddToTheOpenSection) {
  CostMeter outer;
  // Seconds: each section is charged its own time (the sleeps below), never its inner sections'.
  const auto start = std::chrono::steady_clock::now();
  {
    const CostScope scope(outer);
    const CostSection length("length");
    record_forward(at::kFloat, 2, 10);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    {
      const CostSection floor("precision_floor");
      record_forward(at::kDouble, 2, 16);
      record_forward(at::kDouble, 2, 16);
      record_conversion();
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
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
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GE(floor.seconds, 0.2);
  EXPECT_GE(length.seconds, 0.02);
  // Exclusive: charged to the length section too, the floor's 0.2 s would push the sum past the wall.
  EXPECT_LE(length.seconds + floor.seconds, wall + 1e-3);
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

TEST(AuditCost, DirectionsDrawnOnTwoThreadsAreThePlainLoopsDrawsAndState) {
  const auto f64 = at::TensorOptions().dtype(at::kDouble);
  struct Case {
    const char* name;
    std::vector<at::Tensor> like;
    bool split;
  };
  const std::vector<Case> cases{
      // Split after the first tensor; after it a count not a multiple of 16, a tiny tensor (ATen's
      // one-at-a-time path) and float32, none of which the split predicts.
      {"mixed", {at::empty({4099, 256}, f64), at::empty({7}, f64), at::empty({1000, 1001}, f64),
                 at::empty({3, 5}, at::TensorOptions().dtype(at::kFloat)), at::empty({1100, 1000}, f64)}, true},
      {"whole blocks", {at::empty({2048, 1025}, f64), at::empty({2048, 1024}, f64)}, true},
      // The front's count is not a multiple of 16: its last block is drawn again.
      {"last block again", {at::empty({1100, 1001}, f64), at::empty({1 << 20}, f64)}, true},
      {"too small to split", {at::empty({10, 10}, f64), at::empty({100}, f64)}, false},
  };
  for (int64_t misprediction : {0, 1}) {
    for (const auto& c : cases) {
      SCOPED_TRACE(c.name);
      at::Generator plain = at::make_generator<at::CPUGeneratorImpl>(11), split = plain.clone();
      std::vector<at::Tensor> want;
      for (const auto& t : c.like) want.push_back(at::randn(t.sizes(), plain, t.options()));
      const DirectionDraws got = draw_directions(split, c.like, misprediction);
      EXPECT_EQ(got.two_threads, c.split);
      EXPECT_EQ(got.second_redrawn, c.split && misprediction != 0);  // a wrong start is found and redrawn
      ASSERT_EQ(got.directions.size(), want.size());
      for (size_t i = 0; i < want.size(); ++i) EXPECT_TRUE(at::equal(got.directions[i], want[i])) << "tensor " << i;
      EXPECT_TRUE(at::equal(split.get_state(), plain.get_state()));  // what is drawn next is the same too
    }
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
  EXPECT_EQ(screened.verdict(), every_row.verdict());
  EXPECT_EQ(screened.leak_map(), every_row.leak_map());
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

namespace {
// A model that reads its past, with rows that do not mix: y_t = tanh(sum_{k < width} w_k x_{t-k}).
at::Tensor windowed(const at::Tensor& x, int64_t width) {
  at::Tensor acc = at::zeros_like(x);
  for (int64_t k = 0; k < width && k < x.size(1); ++k)
    acc.narrow(1, k, x.size(1) - k).add_(x.narrow(1, 0, x.size(1) - k), 1.0 / (1.0 + static_cast<double>(k)));
  return at::tanh(acc);
}
}  // namespace

TEST(AuditCost, ATableProbedInPartsIsTheWholeTableRowForRow) {
  int64_t calls = 0;
  FunctionTarget t("window 5", 3, [&](const at::Tensor& x, bool) {
    ++calls;
    return windowed(x, 5);
  });
  const AuditOptions o = grassaudit::testing::audit_options(40, 3);
  Prober prober(t, o);
  PrecisionSwitch prec(t, prober, 40);
  const InPrecision own = prec.in_own();
  Pass pass;
  const EffectTable whole = prober.rerun_cuts(own, AuditMode::kEval, 40, {}, pass, Side::kPast);
  const int64_t whole_calls = calls;
  calls = 0;
  Prober::TableParts parts;
  const auto first_part = [](const EffectTable&, int64_t next_cut) { return next_cut > 1; };
  const EffectTable first = prober.rerun_cuts(own, AuditMode::kEval, 40, {}, pass, Side::kPast, first_part, &parts);
  EXPECT_GT(parts.next_cut, 1);
  EXPECT_LT(parts.next_cut, 40);
  EXPECT_NE(first.effect, whole.effect);  // the first part alone is not the table
  const EffectTable merged = prober.rerun_cuts(own, AuditMode::kEval, 40, {}, pass, Side::kPast, {}, &parts);
  EXPECT_EQ(parts.next_cut, 40);
  EXPECT_EQ(merged.effect, whole.effect);  // bit for bit
  EXPECT_EQ(calls, whole_calls);           // one base pass for both parts
  EXPECT_GT(whole.max(), 0.0);
}

TEST(AuditCost, ThePrunedPastHorizonIsTheHorizonOfEveryTableDecidedWhole) {
  // Without a window only the horizon is reported, and tables and float64 re-runs that cannot
  // raise it are skipped; a window (here one no model exceeds) decides every table whole.
  struct Case {
    const char* name;
    FunctionTarget::Fn fn;
    int64_t horizon;  // brute force: the farthest input that moves an output (float64 decides the decaying one)
    bool cheaper;     // pruning skips something
  };
  const std::vector<Case> cases{
      // Reaches 7 back: the length 8 table can raise nothing, and pruning skips it.
      {"window 8", [](const at::Tensor& x, bool) { return windowed(x, 8); }, 7, true},
      {"running sum", [](const at::Tensor& x, bool) { return at::cumsum(x, 1); }, 63, false},
      // Decays by half a step: float32 sees ~24 steps back, float64 ~50 (the re-runs decide).
      {"decaying", [](const at::Tensor& x, bool) {
         std::vector<at::Tensor> ys{x.select(1, 0)};
         for (int64_t i = 1; i < x.size(1); ++i) ys.push_back(ys.back() * 0.5 + x.select(1, i));
         return at::stack(ys, 1);
       }, -1, true},
      // Nothing moves in the first table, so the next ones are screened before anything else.
      {"present only", [](const at::Tensor& x, bool) { return at::sin(x); }, 0, true},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    FunctionTarget pruned_t(c.name, 3, c.fn), whole_t(c.name, 3, c.fn);
    AuditOptions o = grassaudit::testing::audit_options(64, 3);
    o.past_horizon = true;
    const AuditResult pruned = run_causality_audit(pruned_t, o);
    o.window = 1000;
    const AuditResult whole = run_causality_audit(whole_t, o);
    ASSERT_TRUE(pruned.past_horizon.has_value());
    EXPECT_EQ(pruned.past_horizon, whole.past_horizon);
    if (c.horizon >= 0)
      EXPECT_EQ(*pruned.past_horizon, c.horizon);
    else  // beyond what float32 sees: float64 decided
      EXPECT_GT(*pruned.past_horizon, 30);
    const auto fe = [](const AuditResult& r) {
      return to_json(r)["forwards"]["by_check"]["past"]["forward_equivalents"].get<double>();
    };
    if (c.cheaper)
      EXPECT_LT(fe(pruned), fe(whole));
    else
      EXPECT_LE(fe(pruned), fe(whole));
  }
}

TEST(AuditCost, APastScreenThatMovesDecidesEveryScreenedTableAgain) {
  // Nothing at the main length; at L = 31 y_t, t < 10, reads x_{t-5} only where x_{t-5} > 3
  // (rare: a first trial may miss it where the others do not; cuts below 10, which a table decided
  // without this screen probes with every trial); at L = 16 y_t reads x_{t-1}, always. The L = 16
  // screen moves, so the screened tables before it are decided again: the horizon is the one
  // without any screen.
  const FunctionTarget::Fn fn = [](const at::Tensor& x, bool) {
    const int64_t L = x.size(1);
    auto shifted = [&](int64_t D) { return at::constant_pad_nd(x.narrow(1, 0, L - D), {0, 0, D, 0}); };
    if (L == 31) return x + at::relu(shifted(5) - 3.0) * at::arange(L).lt(10).to(x.dtype()).view({1, L, 1});
    if (L == 16) return x + 0.5 * shifted(1);
    return x * 1.0;
  };
  int64_t rare_seen = 0;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    SCOPED_TRACE(seed);
    FunctionTarget screened_t("length-dependent past", 1, fn), every_t("length-dependent past", 1, fn);
    AuditOptions o = grassaudit::testing::audit_options(32, 3);
    o.seed = seed;
    o.past_horizon = true;
    o.gradient_check = false;
    const AuditResult screened = run_causality_audit(screened_t, o);
    o.screen = false;
    const AuditResult every = run_causality_audit(every_t, o);
    ASSERT_TRUE(screened.past_horizon && every.past_horizon);
    EXPECT_EQ(*screened.past_horizon, *every.past_horizon);
    if (*every.past_horizon > 1) ++rare_seen;  // the rare read counted, beyond L = 16's distance 1
  }
  EXPECT_GT(rare_seen, 0);  // the rare dependence is there to be missed
}

TEST(AuditCost, TheFutureScreenEndsOnTheShortestTableThatMovesAndChangesNoFact) {
  // y_t reads x_{t+1}: every length leaks, the shortest (L = 2, one cut, one screen row) first.
  const FunctionTarget::Fn next = [](const at::Tensor& x, bool) { return x + at::roll(x, {-1}, {1}); };
  FunctionTarget screened_t("next", 3, next), every_t("next", 3, next);
  AuditOptions o = grassaudit::testing::audit_options(32, 3);
  const AuditResult screened = run_causality_audit(screened_t, o);
  o.screen = false;  // --probe-every-row
  const AuditResult every = run_causality_audit(every_t, o);
  ASSERT_EQ(screened.seq_lens.back(), 2);
  EXPECT_EQ(screened.probes, every.probes + 1);
  EXPECT_EQ(screened.leak_horizon, 1);
  nlohmann::json a = to_json(screened), b = to_json(every);
  for (auto* j : {&a, &b})
    for (const char* cost : {"seconds", "seconds_by_check", "forwards", "probes"}) j->erase(cost);
  EXPECT_EQ(a.dump(), b.dump());
}

TEST(AuditCost, TheFloorJittersOnlyTheTokenRowsAForwardReadsAndGetsTheSameBits) {
  ModelConfig c;
  c.mixer = "past";
  c.vocab_size = 500;
  c.d_model = 16;
  c.rank = 4;
  c.layers = 2;
  c.max_len = 16;
  c.d_ff = 32;
  c.offsets = {1, 2};
  at::manual_seed(5);
  LanguageModel lm(c);
  // The same model, jittered whole: a target that says nothing of the rows it reads.
  struct Whole : BuiltinLmTarget {
    using BuiltinLmTarget::BuiltinLmTarget;
    std::vector<RowsRead> jitter_rows_read(const at::Tensor&) override { return {}; }
  };
  BuiltinLmTarget rows_t(lm);
  const auto x = at::zeros({2, 16}, at::kLong);
  ASSERT_EQ(rows_t.jitter_rows_read(x).size(), 1u);  // the token table, read at the ids of x
  EXPECT_EQ(rows_t.jitter_rows_read(x)[0].rows.numel(), 1);
  const AuditOptions o = grassaudit::testing::audit_options(16, 2);
  std::vector<at::Tensor> before;
  for (const auto& p : lm->parameters()) before.push_back(p.detach().clone());
  // Each measured as a float64 target's own precision (a switch made after the conversion).
  const auto floor_in_float64 = [](AuditTarget& t, const AuditOptions& opt) {
    EXPECT_TRUE(t.to_dtype(at::kDouble, nullptr));
    Prober p(t, opt);
    Prober::Floor f;
    {
      PrecisionSwitch prec(t, p, 16);
      f = p.precision_floor(prec.in_own(), 16, 2e-7, 8);
    }
    EXPECT_TRUE(t.to_dtype(at::kFloat, nullptr));
    return f;
  };
  const Prober::Floor by_rows = floor_in_float64(rows_t, o);
  Whole whole_t(lm);
  const Prober::Floor whole = floor_in_float64(whole_t, o);
  ASSERT_TRUE(by_rows.measurable);
  EXPECT_EQ(by_rows.value, whole.value);  // bit for bit
  EXPECT_EQ(by_rows.tensors, whole.tensors);
  const auto after = lm->parameters();
  for (size_t i = 0; i < before.size(); ++i) EXPECT_TRUE(at::equal(before[i], after[i].detach())) << i;
}
