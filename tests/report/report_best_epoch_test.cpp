// Runs trained to their best epoch: which runs count, how they pair, what the section and the
// ratio table say while a run is still training and once both have stopped.
#include <gtest/gtest.h>

#include <cmath>

#include <string>
#include <vector>

#include "report/best_epoch.h"
#include "report/figure_plan.h"
#include "report/published.h"
#include "report/ratio_table.h"
#include "report_test_util.h"

namespace grassaudit {
namespace {

const Published& pub() {
  static const Published p = load_published((testing::source_dir() / "reference").string());
  return p;
}

// A paper-size run on the 30-epoch schedule with patience 3, audited causal, at bf16.
RunRecord patience_run(const std::string& name, MixerFamily family, MixerPairing pairing, double best_ppl,
                       double best_epoch, double epochs, const std::string& stopped_by) {
  RunRecord r;
  r.name = name;
  r.task = "lm";
  r.family = family;
  r.pairing = pairing;
  r.tokenizer = "wordpiece";
  r.dataset = "wikitext-2 (v1 tokenized, <unk>)";
  r.seq_len = 128;
  r.layers = 6;
  r.d_model = 256;
  r.seed = 1;
  r.epochs = epochs;
  r.epochs_planned = 30;
  r.patience = 3;
  r.stopped_by = stopped_by;
  r.best_epoch = best_epoch;
  r.best_valid_ppl = best_ppl;
  r.audit.verdict = "causal";
  r.audit.leak_horizon = 0;
  RunProvenance p;
  p.precision = "bf16";
  p.cpu = "Test CPU, 2 cores";
  r.provenance = p;
  for (int e = 1; e <= static_cast<int>(epochs); ++e) {
    r.evals.push_back({static_cast<double>(e), best_ppl + 10.0 * std::abs(e - best_epoch)});
  }
  if (family == MixerFamily::kGrassmann) {
    r.offsets = {1, 2, 4, 8, 12, 16};
    r.offset_mode = "per-layer";
  }
  return r;
}

RunRecord attention(double ppl, double best, double epochs, const std::string& stop) {
  return patience_run("a-seed1", MixerFamily::kAttention, MixerPairing::kCausalMask, ppl, best, epochs, stop);
}
RunRecord past(double ppl, double best, double epochs, const std::string& stop) {
  return patience_run("p-seed1", MixerFamily::kGrassmann, MixerPairing::kPast, ppl, best, epochs, stop);
}

TEST(ReportBestEpoch, OnlyRunsThatStoppedByPatienceOrScheduleHaveABestEpoch) {
  EXPECT_TRUE(reached_best_epoch(attention(150, 10, 13, "patience")));
  EXPECT_TRUE(reached_best_epoch(attention(150, 30, 30, "completed")));
  EXPECT_FALSE(reached_best_epoch(attention(150, 5, 6, "time_budget")));
  EXPECT_FALSE(reached_best_epoch(attention(150, 5, 6, "interrupted")));
  RunRecord budget = attention(150, 3, 3, "max_tokens");
  budget.patience = 0;
  EXPECT_FALSE(reached_best_epoch(budget));
  EXPECT_TRUE(best_epoch_runs({budget}).empty());  // no early stopping: not in the section
  EXPECT_EQ(render_best_epoch_section(pub(), {budget}), "");
}

TEST(ReportBestEpoch, PairsAtTheBestEpochsAndSaysWhereTheRatioStands) {
  const std::vector<RunRecord> runs = {attention(150.0, 10, 13, "patience"),
                                       past(180.0, 12, 15, "patience")};
  const auto pairs = best_epoch_pairs(runs);
  ASSERT_EQ(pairs.size(), 1u);
  EXPECT_DOUBLE_EQ(pairs[0].ratio, 1.2);
  const std::string md = render_best_epoch_section(pub(), runs);
  EXPECT_NE(md.find("**Best-epoch ratio, Grassmann (past) / attention: 1.200** (180.00 / 150.00)"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("`p-seed1` reached 180.00 at epoch 12 of 15 trained"), std::string::npos) << md;
  // The paper's 6-layer L 128 ratio is 275.7 / 248.4 = 1.110; 1.2 is 8.1% above it.
  EXPECT_NE(md.find("Against the paper: 1.200 against its 1.110 at L 128 with 6 layers (275.7 / "
                    "248.4): 8.1% above it."),
            std::string::npos)
      << md;
  // Below every reproduction whose Grassmann is worse (their lowest is 1.242).
  EXPECT_NE(md.find("ours lies below that range"), std::string::npos) << md;
  EXPECT_NE(md.find("precision bf16 on Test CPU, 2 cores"), std::string::npos) << md;
  EXPECT_NE(md.find("text wikitext-2 (v1 tokenized, <unk>) vs the paper's raw"), std::string::npos) << md;
  EXPECT_EQ(md.find("No best-epoch ratio yet"), std::string::npos) << md;
}

TEST(ReportBestEpoch, ARunStillTrainingGivesNoRatioAndSaysSo) {
  const std::vector<RunRecord> runs = {attention(150.0, 10, 13, "patience"),
                                       past(200.0, 4, 5, "time_budget")};
  EXPECT_TRUE(best_epoch_pairs(runs).empty());
  const std::string md = render_best_epoch_section(pub(), runs);
  EXPECT_NE(md.find("No best-epoch ratio yet"), std::string::npos) << md;
  EXPECT_NE(md.find("`p-seed1` (still training (time budget; resumes from its checkpoint)"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| 4 so far |"), std::string::npos) << md;
}

TEST(ReportBestEpoch, OtherPrecisionOrSeedDoesNotPair) {
  RunRecord p = past(180.0, 12, 15, "patience");
  p.provenance->precision = "fp32";
  EXPECT_TRUE(best_epoch_pairs({attention(150.0, 10, 13, "patience"), p}).empty());
  RunRecord s = past(180.0, 12, 15, "patience");
  s.seed = 2;
  EXPECT_TRUE(best_epoch_pairs({attention(150.0, 10, 13, "patience"), s}).empty());
}

TEST(ReportBestEpoch, RatioTableKeepsBudgetRunsApartFromBestEpochRuns) {
  // The same setting stopped at a token budget (no patience, fp32) is its own pair.
  RunRecord a3 = attention(165.0, 3, 3, "max_tokens");
  a3.name = "a3-seed1";
  a3.patience = 0;
  a3.provenance->precision = "fp32";
  RunRecord p3 = past(195.0, 3, 3, "max_tokens");
  p3.name = "p3-seed1";
  p3.patience = 0;
  p3.provenance->precision = "fp32";
  const std::vector<RunRecord> runs = {attention(150.0, 10, 13, "patience"), a3, p3};
  int ours = 0;
  for (const auto& row : ratio_rows(pub(), runs)) {
    if (row.origin != RowOrigin::kOurs) continue;
    ++ours;
    if (row.source.find("a3-seed1") != std::string::npos) {
      ASSERT_TRUE(row.ratio_value);
      EXPECT_NEAR(*row.ratio_value, 195.0 / 165.0, 1e-12);
    } else {
      EXPECT_FALSE(row.ratio_value) << row.source;  // the best-epoch attention has no past yet
      EXPECT_NE(row.setting.find("bf16, to the best epoch (patience 3)"), std::string::npos);
    }
  }
  EXPECT_EQ(ours, 2);
}

TEST(ReportBestEpoch, RatioTableSaysWhenRunsStoppedBeforeTheirBestEpoch) {
  // Both still improving when their time budget ran out, at different epochs.
  const std::vector<RunRecord> runs = {attention(95.0, 9, 9, "time_budget"), past(128.0, 8, 8, "time_budget")};
  int ours = 0;
  for (const auto& row : ratio_rows(pub(), runs)) {
    if (row.origin != RowOrigin::kOurs) continue;
    ++ours;
    ASSERT_TRUE(row.ratio_value);
    EXPECT_EQ(row.setting.find("to the best epoch (patience"), std::string::npos) << row.setting;
    EXPECT_NE(row.setting.find("early stopping (patience 3) but stopped before the best epoch"), std::string::npos)
        << row.setting;
    EXPECT_NE(row.ratio.find("Transformer 9 epochs, Grassmann 8 epochs"), std::string::npos) << row.ratio;
  }
  EXPECT_EQ(ours, 1);
}

TEST(ReportBestEpoch, LearningCurvesPlotOurRunsBesideThePublishedPoints) {
  const std::vector<RunRecord> runs = {attention(150.0, 10, 13, "patience")};
  const FigurePlan plan = plan_figures(runs, {}, pub());
  const Figure* fig = nullptr;
  for (const auto& f : plan.figures) {
    if (f.stem == "learning-curves") fig = &f;
  }
  ASSERT_NE(fig, nullptr);
  bool ours = false, repro = false;
  for (const auto& [name, data] : plan.data_files) {
    if (name == "curve-a-seed1.dat") ours = data.rfind("1 240\n", 0) == 0;
    if (name.rfind("curve-repro-", 0) == 0) repro = true;
  }
  EXPECT_TRUE(ours);
  EXPECT_TRUE(repro);  // reference/published records per-epoch points of a reproduction
  EXPECT_NE(fig->caption.find("TransformerLM 248.4"), std::string::npos) << fig->caption;
  EXPECT_NE(plan.script.find("best epoch 10"), std::string::npos);
}

}  // namespace
}  // namespace grassaudit
