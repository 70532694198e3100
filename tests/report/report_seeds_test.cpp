// Runs that differ only by seed (tests/report/fixtures/seeds): one row of mean ± sample std in
// the tables, one line with error bars in the figure, the ratio of means with its limits, and
// the provenance table for runs with and without a provenance record.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "report/figure_plan.h"
#include "report/published.h"
#include "report/ratio_table.h"
#include "report/report.h"
#include "report/runs.h"
#include "report/seed_groups.h"
#include "report_test_util.h"

namespace grassaudit {
namespace {

using testing::ScratchDir;
using testing::read_text;
using testing::row_cells;
using testing::section;
namespace fs = std::filesystem;

fs::path seeds_runs() { return testing::fixtures_dir() / "seeds" / "runs"; }

ReportOptions seeds_options(const fs::path& out) {
  ReportOptions o = testing::fixture_options(out);
  o.runs_dir = seeds_runs().string();
  return o;
}

const Published& published_numbers() {
  static const Published p = load_published((testing::source_dir() / "reference").string());
  return p;
}

class SeedReport : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new ScratchDir();
    generate_report(seeds_options(dir_->path()));
    readme_ = new std::string(read_text(dir_->path() / "README.md"));
  }
  static void TearDownTestSuite() {
    delete readme_;
    delete dir_;
  }
  static const std::string& md() { return *readme_; }

 private:
  static ScratchDir* dir_;
  static std::string* readme_;
};
ScratchDir* SeedReport::dir_ = nullptr;
std::string* SeedReport::readme_ = nullptr;

// A causal past-pairing LM run with a seed and a validation perplexity; tests adjust the rest.
RunRecord past_run(const std::string& name, std::optional<long long> seed, const std::string& key = "k",
                   const std::string& verdict = "causal", double ppl = 300.0) {
  RunRecord r;
  r.name = name;
  r.task = "lm";
  r.family = MixerFamily::kGrassmann;
  r.pairing = MixerPairing::kPast;
  r.seed = seed;
  r.config_key = key;
  r.audit.verdict = verdict;
  r.best_valid_ppl = ppl;
  return r;
}

TEST(ReportSeedGroups, PoolsRunsThatDifferOnlyBySeed) {
  const auto runs = load_runs(seeds_runs().string());
  const auto groups = seed_groups(runs);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].label, "attn-s1, attn-s2, attn-s3");
  EXPECT_EQ(groups[0].seeds, (std::vector<long long>{1, 2, 3}));
  EXPECT_NEAR(groups[0].valid.mean, 272.0, 1e-12);
  EXPECT_NEAR(*groups[0].valid.std, std::sqrt(7.0), 1e-12);  // deviations -2, -1, 3
  EXPECT_EQ(groups[1].label, "past-s1, past-s2, past-s3");
  EXPECT_NEAR(groups[1].valid.mean, 282.0, 1e-12);
  EXPECT_NEAR(*groups[1].valid.std, 2.0, 1e-12);
  EXPECT_NEAR(groups[1].test.mean, 271.0, 1e-12);
  // The curve: the members' perplexities at each logged epoch.
  const auto curve = group_curve(groups[1]);
  ASSERT_EQ(curve.size(), 2u);
  EXPECT_EQ(curve[0].epoch, 0.5);
  EXPECT_NEAR(curve[0].ppl.mean, 402.0, 1e-12);
  EXPECT_EQ(curve[0].ppl.n, 3u);
  EXPECT_EQ(curve[1].epoch, 1.0);
  EXPECT_NEAR(curve[1].ppl.mean, 282.0, 1e-12);
}

// The legend name of a pooled group: the members' common name without "-seed<N>".
TEST(ReportSeedGroups, ShortLabelDropsTheSeedSuffixOnlyWhenItIsShared) {
  auto run = [](const std::string& name, long long seed) { return past_run(name, seed); };
  auto g = seed_groups({run("cpu-small-past-seed1", 1), run("cpu-small-past-seed2", 2)});
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].short_label, "cpu-small-past");
  g = seed_groups({run("x-seed1", 1), run("y-seed2", 2)});  // different stems: the full label
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].short_label, "x-seed1, y-seed2");
  g = seed_groups({run("x-seedling", 1), run("x-seed", 2)});  // not a seed suffix
  EXPECT_EQ(g[0].short_label, g[0].label);
  // The fixtures' names carry no suffix: the legend keeps the member list.
  EXPECT_EQ(seed_groups(load_runs(seeds_runs().string()))[0].short_label, "attn-s1, attn-s2, attn-s3");
}

// Our ratio rows pair attention with past pairing at one normalisation: a pre-norm model against a
// post-norm one would measure the placement, not the mixer.
TEST(ReportSeedGroups, OurRatiosPairRunsOfOneNormalisation) {
  auto run = [](const std::string& name, bool attention, const std::string& norm, double ppl) {
    RunRecord r = past_run(name, 1, name, "causal", ppl);
    if (attention) {
      r.family = MixerFamily::kAttention;
      r.pairing = MixerPairing::kCausalMask;
    }
    r.tokenizer = "wordpiece";
    r.seq_len = 128;
    r.layers = 4;
    r.d_model = 128;
    r.norm = norm;
    return r;
  };
  const auto rows = ratio_rows(published_numbers(), {run("a-post", true, "post", 270.0), run("g-post", false, "post", 280.0),
                                       run("a-pre", true, "pre", 300.0), run("g-pre", false, "pre", 264.0)});
  std::vector<const RatioRow*> ours;
  for (const auto& r : rows)
    if (r.origin == RowOrigin::kOurs) ours.push_back(&r);
  ASSERT_EQ(ours.size(), 2u);
  for (const RatioRow* r : ours) {
    ASSERT_TRUE(r->ratio_value.has_value());
    const bool pre = r->setting.find("pre-norm") != std::string::npos;
    EXPECT_NEAR(*r->ratio_value, pre ? 264.0 / 300.0 : 280.0 / 270.0, 1e-12) << r->source;
    EXPECT_EQ(r->caveats.find("best of"), std::string::npos) << r->caveats;
    EXPECT_EQ(r->caveats.find("pre-norm vs the paper's post-norm") != std::string::npos, pre) << r->caveats;
  }
}

// Copies of one run: what keeps them apart.
TEST(ReportSeedGroups, OnlyDistinctSeedsOfOneSettingArePooled) {
  auto run = [](const std::string& name, std::optional<long long> seed, const std::string& key,
                const std::string& verdict) { return past_run(name, seed, key, verdict); };
  // Same seed twice: a duplicate, not a second seed.
  EXPECT_EQ(seed_groups({run("a", 1, "k", "causal"), run("b", 1, "k", "causal")}).size(), 2u);
  // No seed recorded: cannot tell.
  EXPECT_EQ(seed_groups({run("a", 1, "k", "causal"), run("b", std::nullopt, "k", "causal")}).size(), 2u);
  // A different setting.
  EXPECT_EQ(seed_groups({run("a", 1, "k", "causal"), run("b", 2, "k2", "causal")}).size(), 2u);
  // A different audit standing.
  EXPECT_EQ(seed_groups({run("a", 1, "k", "causal"), run("b", 2, "k", "")}).size(), 2u);
  const auto pooled = seed_groups({run("b", 2, "k", "causal"), run("a", 1, "k", "causal")});
  ASSERT_EQ(pooled.size(), 1u);
  EXPECT_EQ(pooled[0].label, "a, b");  // members sorted by name
  EXPECT_EQ(seeds_cell(pooled[0]), "1,2 (n=2)");
  EXPECT_EQ(group_valid_cell(pooled[0]), "300.00 ± 0.00 (n=2)");
}

TEST(ReportSeedGroups, LeakyGroupIsQuarantinedAsAWhole) {
  std::vector<RunRecord> runs;
  for (long long s : {1, 2}) {
    RunRecord r;
    r.name = "fut-s" + std::to_string(s);
    r.task = "lm";
    r.family = MixerFamily::kGrassmann;
    r.pairing = MixerPairing::kFuture;
    r.seed = s;
    r.config_key = "k";
    r.audit.verdict = "leaky";
    r.audit.leak_horizon = 15;
    r.quarantined_best_valid_ppl = s == 1 ? 2.5 : 2.7;
    runs.push_back(r);
  }
  const auto g = seed_groups(runs);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(group_valid_cell(g[0]), "~~2.60 ± 0.14 (n=2)~~ QUARANTINED (LEAKY, horizon 15)");
}

TEST(ReportSeedGroups, ConfigJsonKeyIgnoresOnlyTheSeed) {
  ScratchDir dir;
  const std::string summary =
      R"({"task": "lm", "mixer": "past", "audit": {"verdict": "causal"}, "best_valid_ppl": 300.0})";
  auto make = [&](const std::string& name, const std::string& config) {
    testing::write_text(dir.path() / name / "summary.json", summary);
    testing::write_text(dir.path() / name / "config.json", config);
    return load_run((dir.path() / name).string());
  };
  const RunRecord a = make("a", R"({"model": {"d_model": 128}, "train": {"seed": 1, "lr": 0.001}})");
  const RunRecord b = make("b", R"({"model": {"d_model": 128}, "train": {"seed": 2, "lr": 0.001}})");
  const RunRecord c = make("c", R"({"model": {"d_model": 128}, "train": {"seed": 3, "lr": 0.002}})");
  EXPECT_EQ(a.config_key, b.config_key);
  EXPECT_NE(a.config_key, c.config_key);
}

TEST_F(SeedReport, TablesShowMeanAndStdOverSeeds) {
  const std::string a = section(md(), "## (a)");
  const auto attn = row_cells(a, "ours: attn-s1, attn-s2, attn-s3");
  ASSERT_EQ(attn.size(), 13u) << a;
  EXPECT_EQ(attn[10], "1,2,3 (n=3)");
  EXPECT_EQ(attn[11], "272.00 ± 2.65 (n=3)");
  EXPECT_EQ(attn[12], "CAUSAL (each of 3 runs)");
  const auto past = row_cells(a, "ours: past-s1, past-s2, past-s3");
  ASSERT_EQ(past.size(), 13u);
  EXPECT_EQ(past[4], "wikitext-2 (v1 tokenized, <unk>)");
  EXPECT_EQ(past[11], "282.00 ± 2.00 (n=3)");
  // One row per setting, not per run.
  EXPECT_EQ(a.find("| ours: past-s2 |"), std::string::npos);

  const std::string b = section(md(), "## (b)");
  const auto ratio = row_cells(b, "ours: attn-s1, attn-s2, attn-s3 vs past-s1, past-s2, past-s3");
  ASSERT_EQ(ratio.size(), 7u) << b;
  EXPECT_EQ(ratio[4], "1.037 (1 epoch, 3 seeds each, 4 layers, d_model 128)");  // 282 / 272
  for (const char* d : {"1 epoch vs the paper's 30", "4 layers vs the paper's 6 at L 128",
                        "d_model 128 vs the paper's 256",
                        "text wikitext-2 (v1 tokenized, <unk>) vs the paper's raw",
                        "Grassmann rank 16 vs the paper's 32"}) {
    EXPECT_NE(ratio[5].find(d), std::string::npos) << d << " in " << ratio[5];
  }
  // A one-epoch ratio next to what a reproduction measured after one epoch and at its best.
  EXPECT_NE(b.find("A ratio after 1 epoch says little about the ratio at the best epoch: alphaXiv "
                   "paper-implementations, early measured 1.034 after 1 epoch (619.66 / 599.42) "
                   "and 1.242 at its best epochs (236.05 / 190.03); youdie006/grassmann, pre-norm + "
                   "N(0, 0.02) init measured 0.611 after 1 epoch (352.77 / 577.68) and 0.918 at its "
                   "best epochs (200.29 / 218.28)"),
            std::string::npos)
      << b;
  // Per-run details stay per run.
  EXPECT_EQ(row_cells(section(md(), "## Run details"), "past-s2").size(), 13u);
}

TEST_F(SeedReport, ProvenanceShownPerRun) {
  const std::string p = section(md(), "## Run provenance");
  const auto attn = row_cells(p, "attn-s1");
  ASSERT_EQ(attn.size(), 8u) << p;
  EXPECT_EQ(attn[1], "`0123456789ab`, 0.3.0");
  EXPECT_EQ(attn[2], "1.13.0");
  EXPECT_EQ(attn[3], "OpenBLAS 0.3.21 (fixture)");
  EXPECT_EQ(attn[4], "2 / not recorded, world 1, cpu, fp32, CPU not recorded");
  EXPECT_EQ(attn[5], "bert-base-uncased/vocab.txt `bbbbbbbbbbbb`; wikitext-2/wiki.train.tokens "
                     "`aaaaaaaaaaaa`");
  EXPECT_EQ(attn[6], "`grassaudit train --mixer attention --preset cpu-small --tokenizer wordpiece "
                     "--seed 1 --out reports/runs/attn-s1`");
  EXPECT_EQ(attn[7], "current gate; target: built-in attention LM (fixture; final hidden state)");
  // No provenance, and an audit.json from before the current gate.
  const auto old = row_cells(p, "past-s1");
  ASSERT_EQ(old.size(), 8u);
  EXPECT_EQ(old[1], "produced by older code (no provenance; audit by an older gate)");
  EXPECT_EQ(old[7], "older gate (no stopped_early / *_planned); target: built-in past LM (fixture; "
                    "output logits)");
  // No provenance and no audit.json: nothing said about a gate.
  EXPECT_EQ(row_cells(p, "past-s2")[1], "produced by older code (no provenance)");
  EXPECT_EQ(row_cells(p, "past-s2")[7], "no audit.json");
  // The run table carries the code too.
  const auto details = row_cells(section(md(), "## Run details"), "attn-s1");
  ASSERT_EQ(details.size(), 13u);
  EXPECT_EQ(details[5], "1");
  EXPECT_EQ(details[11], "`0123456789ab`, 0.3.0");
}

TEST_F(SeedReport, RegenerationIsByteIdentical) {
  ScratchDir a, b;
  generate_report(seeds_options(a.path()));
  generate_report(seeds_options(b.path()));
  EXPECT_TRUE(testing::tree_contents(a.path()) == testing::tree_contents(b.path()));
}

TEST(ReportSeedFigure, MeansWithErrorBarsAndThePapersLines) {
  const auto runs = load_runs(seeds_runs().string());
  const FigurePlan plan = plan_figures(runs, {}, published_numbers());
  const std::string* data = nullptr;
  for (const auto& [name, contents] : plan.data_files) {
    if (name == "ppl-past-s1-seeds.dat") data = &contents;
  }
  ASSERT_NE(data, nullptr);
  EXPECT_EQ(*data, "0.5 402 2\n1 282 2\n");  // epoch, mean, sample std
  EXPECT_NE(plan.script.find("'data/ppl-past-s1-seeds.dat' using 1:2:3 with yerrorlines"),
            std::string::npos);
  // The paper's numbers at L 128 as horizontal dotted lines, and the caption says what they are.
  EXPECT_NE(plan.script.find("275.7 with lines lc rgb 'gray30' dt 3"), std::string::npos);
  EXPECT_NE(plan.script.find("248.4 with lines lc rgb 'gray60' dt 3"), std::string::npos);
  ASSERT_FALSE(plan.figures.empty());
  const std::string& caption = plan.figures[0].caption;
  EXPECT_NE(caption.find("error bars one sample standard deviation"), std::string::npos);
  EXPECT_NE(caption.find("at L 128: TransformerLM 248.4 (6 layers), GrassmannLM 275.7 (6 layers); "
                         "the paper has no row at our depth (4 layers)"),
            std::string::npos)
      << caption;
  // Nothing leaky here: the caption does not mention dashed lines.
  EXPECT_EQ(caption.find("Dashed"), std::string::npos);
}

TEST(ReportSeedFigure, NoReferenceLinesPromisedWhereNoneAreDrawn) {
  auto runs = load_runs(seeds_runs().string());
  for (auto& r : runs) r.seq_len = 64;  // the paper has no row at L 64
  const FigurePlan plan = plan_figures(runs, {}, published_numbers());
  EXPECT_EQ(plan.script.find("with lines lc rgb 'gray"), std::string::npos);
  ASSERT_FALSE(plan.figures.empty());
  EXPECT_NE(plan.figures[0].caption.find("no reference lines are drawn"), std::string::npos);
  EXPECT_EQ(plan.figures[0].caption.find("Dotted grey"), std::string::npos);
}

}  // namespace
}  // namespace grassaudit
