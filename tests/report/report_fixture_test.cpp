// The generator on the fixture set: three WikiText-2 runs (causal attention, causal past,
// leaky future) and a throughput sweep.
#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "report/report.h"
#include "report_test_util.h"

namespace grassaudit {
namespace {

using testing::ScratchDir;
using testing::fixture_options;
using testing::read_text;
using testing::row_cells;
using testing::section;

class FixtureReport : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new ScratchDir();
    generate_report(fixture_options(dir_->path()));
    readme_ = new std::string(read_text(dir_->path() / "README.md"));
    // GRASSAUDIT_KEEP_REPORT=<dir>: keep a copy of the fixture report for a human to look at.
    if (const char* keep = std::getenv("GRASSAUDIT_KEEP_REPORT")) {
      generate_report(fixture_options(keep));
    }
  }
  static void TearDownTestSuite() {
    delete readme_;
    delete dir_;
  }
  static const std::string& md() { return *readme_; }
  static const ScratchDir& dir() { return *dir_; }

 private:
  static ScratchDir* dir_;
  static std::string* readme_;
};
ScratchDir* FixtureReport::dir_ = nullptr;
std::string* FixtureReport::readme_ = nullptr;

TEST_F(FixtureReport, WikiTextTableHasOurCausalRows) {
  const std::string a = section(md(), "## (a)");
  EXPECT_EQ(row_cells(a, "ours: attn-wp-l128-n6"),
            (std::vector<std::string>{"ours: attn-wp-l128-n6", "attention", "causal mask",
                                      "WordPiece", "not recorded", "128", "6", "256", "12.59M",
                                      "3 ep (7.20M tok)", "not recorded", "261.37",
                                      "CAUSAL (horizon 0, max effect 0)"}));
  EXPECT_EQ(row_cells(a, "ours: past-wp-l128-n6"),
            (std::vector<std::string>{"ours: past-wp-l128-n6", "grassmann",
                                      "past; offsets 1,2,4,8,12,16 one per layer", "WordPiece",
                                      "not recorded", "128", "6", "256", "12.99M",
                                      "3 ep (7.20M tok)", "not recorded", "298.41",
                                      "CAUSAL (horizon 0, max effect 2.4e-08)"}));
}

TEST_F(FixtureReport, WikiTextTableHasPublishedRows) {
  const std::string a = section(md(), "## (a)");
  const auto paper = row_cells(a, "paper, WikiText-2 table");
  ASSERT_EQ(paper.size(), 13u);
  EXPECT_EQ(paper[1], "attention");
  EXPECT_EQ(paper[3], "BERT WordPiece (bert-base-uncased)");
  EXPECT_EQ(paper[4], "raw");
  EXPECT_EQ(paper[7], "256");
  EXPECT_EQ(paper[8], "12.59M");
  EXPECT_EQ(paper[9], "30 ep, batch 32");
  EXPECT_EQ(paper[11], "248.4");
  EXPECT_EQ(paper[12], "not audited (no code)");
  for (const char* v : {"275.7", "253.6", "282.3", "235.2", "261.1", "190.03", "236.05", "181.66",
                        "253.76", "168.68", "245.10", "218.57", "218.28", "200.29", "1381.35",
                        "290.60"}) {
    EXPECT_NE(a.find("| " + std::string(v) + " |"), std::string::npos) << v;
  }
  // kanenorman names no split: its numbers say so.
  for (const char* v : {"248.7", "356.6"}) {
    EXPECT_NE(a.find("| " + std::string(v) + " (split not stated) |"), std::string::npos) << v;
  }
  const auto kane = row_cells(a, "kanenorman/grassmann");
  ASSERT_EQ(kane.size(), 13u);
  EXPECT_EQ(kane[4], "raw");
  EXPECT_EQ(kane[8], "12,585,472");
  EXPECT_EQ(kane[9], "30 ep (the script's default)");
  EXPECT_EQ(kane[12], "past pairing in code, not audited here");
  // GrassLM: stated in its config.json, no longer "not stated".
  const auto grasslm = row_cells(a, "GrassLM");
  ASSERT_EQ(grasslm.size(), 13u);
  EXPECT_EQ(grasslm[8], "12,607,168");
  EXPECT_EQ(grasslm[9], "30 ep, best epoch 19");
  EXPECT_EQ(grasslm[10], "42");
  // Six paper rows.
  size_t n = 0;
  for (size_t p = a.find("| paper, WikiText-2 table"); p != std::string::npos;
       p = a.find("| paper, WikiText-2 table", p + 1)) {
    ++n;
  }
  EXPECT_EQ(n, 6u);
}

TEST_F(FixtureReport, LeakyRunIsOnlyQuarantined) {
  const std::string a = section(md(), "## (a)");
  const auto row = row_cells(a, "ours: future-wp-l128-n6");
  ASSERT_EQ(row.size(), 13u);
  EXPECT_EQ(row[11], "~~5.84~~ QUARANTINED (LEAKY, horizon 43)");
  EXPECT_EQ(row[12], "LEAKY (horizon 43; offsets imply 43)");
  // Nowhere in the page does the leaky perplexity appear unmarked.
  for (const std::string v : {"5.84", "5.61"}) {
    size_t pos = 0;
    size_t hits = 0;
    while ((pos = md().find(v, pos)) != std::string::npos) {
      ++hits;
      ASSERT_GE(pos, 2u);
      EXPECT_EQ(md().substr(pos - 2, 2), "~~") << "unmarked " << v << " at " << pos;
      EXPECT_EQ(md().substr(pos + v.size(), 17), "~~ QUARANTINED (L") << v;
      pos += v.size();
    }
    EXPECT_GT(hits, 0u) << v;
  }
  // Not in the ratio table.
  const std::string b = section(md(), "## (b)");
  EXPECT_EQ(row_cells(b, "ours: future-wp-l128-n6").size(), 0u);
  EXPECT_NE(b.find("Left out as LEAKY"), std::string::npos);
  // Test perplexity quarantined too.
  const auto detail = row_cells(section(md(), "## Run details"), "future-wp-l128-n6");
  ASSERT_GE(detail.size(), 3u);
  EXPECT_EQ(detail[2], "~~5.61~~ QUARANTINED (LEAKY, horizon 43)");
}

TEST_F(FixtureReport, RatioTable) {
  const std::string b = section(md(), "## (b)");
  const auto ours = row_cells(b, "ours: attn-wp-l128-n6 vs past-wp-l128-n6");
  ASSERT_EQ(ours.size(), 7u);
  EXPECT_EQ(ours[2], "261.37");
  EXPECT_EQ(ours[3], "298.41");
  // The ratio carries its limits beside it.
  EXPECT_EQ(ours[4], "1.142 (3 epochs, 1 seed each, 6 layers, d_model 256)");
  EXPECT_NE(ours[5].find("3 epochs vs the paper's 30"), std::string::npos) << ours[5];
  EXPECT_NE(ours[5].find("text variant (raw / tokenized) not recorded"), std::string::npos);
  EXPECT_NE(b.find("paper 1.110-1.113; public reproductions 0.210-1.453 (Grassmann better in 2 of "
                   "6); ours 1.142 (3 epochs, 1 seed each, 6 layers, d_model 256)"),
            std::string::npos)
      << b;
  // The early alphaXiv gap is published on TEST perplexity: the row says so.
  const auto early = row_cells(b, "alphaXiv paper-implementations, early");
  ASSERT_EQ(early.size(), 7u);
  EXPECT_EQ(early[4], "1.242 (published gap 22.6%, on test perplexity 242.94 / 198.17 = 1.226)");
  EXPECT_NE(early[5].find("GPT-2 BPE tokens"), std::string::npos);
  EXPECT_NE(early[5].find("20 epochs vs the paper's 30"), std::string::npos);
  EXPECT_NE(early[5].find("Transformer 8 heads vs the paper's 4"), std::string::npos);
  // "not comparable because" holds only differences; unknowns have their own column.
  for (const auto& row : {early, row_cells(b, "GrassLM"), row_cells(b, "kanenorman/grassmann")}) {
    ASSERT_EQ(row.size(), 7u);
    EXPECT_EQ(row[5].find("not stated"), std::string::npos) << row[5];
  }
  const auto kane = row_cells(b, "kanenorman/grassmann");
  EXPECT_EQ(kane[4], "1.434");  // no published gap
  EXPECT_NE(kane[5].find("Grassmann 12.61M params vs the paper's 13.00M"), std::string::npos);
  EXPECT_NE(kane[6].find("epochs of the reported run (30 is the script's default)"),
            std::string::npos);
  // The missing reproduction: the ranking flips with normalisation and initialisation.
  const auto pre = row_cells(b, "youdie006/grassmann, pre-norm + N(0, 0.02) init");
  ASSERT_EQ(pre.size(), 7u);
  EXPECT_EQ(pre[4], "0.918 (published gap -8.24%)");
  EXPECT_NE(pre[5].find("pre-norm vs the paper's post-norm"), std::string::npos);
  const auto post = row_cells(b, "youdie006/grassmann, post-norm + default init");
  ASSERT_EQ(post.size(), 7u);
  EXPECT_EQ(post[4], "0.210");
  EXPECT_EQ(post[5].find("norm vs the paper's"), std::string::npos) << post[5];
}

TEST_F(FixtureReport, ProvenanceMarksOlderRuns) {
  const std::string p = section(md(), "## Run provenance");
  // The fixture runs carry no provenance and their audit.json predates the current gate.
  const auto row = row_cells(p, "attn-wp-l128-n6");
  ASSERT_EQ(row.size(), 8u);
  EXPECT_EQ(row[1], "produced by older code (no provenance; audit by an older gate)");
  EXPECT_EQ(row[7].rfind("older gate (no stopped_early / *_planned)", 0), 0u) << row[7];
  const auto details = row_cells(section(md(), "## Run details"), "attn-wp-l128-n6");
  ASSERT_EQ(details.size(), 13u);
  EXPECT_EQ(details[9], "2 / not recorded");
  EXPECT_EQ(details[11], "older code (no provenance)");
}

TEST_F(FixtureReport, SourcesNameFileAndCommitForEveryReproduction) {
  const std::string s = section(md(), "## Sources of the published numbers");
  for (const char* name : {"alphaXiv paper-implementations, early", "GrassLM",
                           "kanenorman/grassmann", "youdie006/grassmann, post-norm + default init"}) {
    EXPECT_NE(s.find("| " + std::string(name) + " |"), std::string::npos) << name;
  }
  EXPECT_NE(s.find("models/GrassLM-10M/config.json](https://github.com/adriansimonn/GrassLM/blob/"
                   "472db8d334c813a698090527b055807e5b3e1f22/models/GrassLM-10M/config.json) at "
                   "`472db8d334c8`"),
            std::string::npos);
}

TEST_F(FixtureReport, PplFigureCaptionDescribesTheLinesDrawn) {
  // The fixture runs are at L 128 with 6 layers: the paper's rows there are drawn.
  const size_t at = md().find("From each run's metrics.jsonl (validation evaluations).");
  ASSERT_NE(at, std::string::npos);
  const std::string caption = md().substr(at, md().find('\n', at) - at);
  EXPECT_NE(caption.find("at L 128: TransformerLM 248.4 (6 layers), GrassmannLM 275.7 (6 layers)"),
            std::string::npos)
      << caption;
  EXPECT_EQ(caption.find("no row at our depth"), std::string::npos) << caption;
}

TEST_F(FixtureReport, LiteralSectionConcludesFromNumbers) {
  const std::string c = section(md(), "## (c)");
  EXPECT_NE(c.find("275.7"), std::string::npos);
  EXPECT_NE(c.find("inconsistent with the literal reading having been trained"), std::string::npos);
  EXPECT_NE(c.find("the leak is exploited"), std::string::npos);
}

TEST_F(FixtureReport, FiguresAreLinkedAndExist) {
  for (const std::string stem : {"ppl", "train-loss", "bench", "leakmap-attn-wp-l128-n6",
                                 "leakmap-past-wp-l128-n6", "leakmap-future-wp-l128-n6"}) {
    EXPECT_NE(md().find("(figures/" + stem + ".png)"), std::string::npos) << stem;
    for (const char* ext : {".png", ".svg"}) {
      const auto p = dir().path() / "figures" / (stem + ext);
      ASSERT_TRUE(std::filesystem::exists(p)) << p;
      EXPECT_GT(std::filesystem::file_size(p), 1000u) << p;
    }
  }
  const std::string png = read_text(dir().path() / "figures" / "ppl.png");
  EXPECT_EQ(png.substr(1, 3), "PNG");
}

TEST_F(FixtureReport, SkipsFolderWithoutSummaryAndShowsNoSnliRuns) {
  EXPECT_EQ(md().find("incomplete-run"), std::string::npos);
  EXPECT_NE(section(md(), "## (d)").find("No SNLI runs recorded yet"), std::string::npos);
}

TEST_F(FixtureReport, RegenerationIsByteIdentical) {
  ScratchDir a, b;
  generate_report(fixture_options(a.path()));
  generate_report(fixture_options(b.path()));
  const auto ta = testing::tree_contents(a.path());
  const auto tb = testing::tree_contents(b.path());
  ASSERT_EQ(ta.size(), tb.size());
  EXPECT_GE(ta.size(), 13u);  // README + 6 figures x 2 formats
  for (const auto& [name, bytes] : ta) {
    ASSERT_TRUE(tb.count(name)) << name;
    EXPECT_TRUE(bytes == tb.at(name)) << name << " differs";
  }
  // Regenerating in place changes nothing either.
  generate_report(fixture_options(a.path()));
  EXPECT_TRUE(testing::tree_contents(a.path()) == ta);
}

TEST(Report, MissingGnuplotStillWritesTables) {
  ScratchDir out;
  ReportOptions o = fixture_options(out.path());
  o.gnuplot = "/nonexistent/gnuplot";
  generate_report(o);
  const std::string md = read_text(out.path() / "README.md");
  EXPECT_NE(md.find("Figures were not generated"), std::string::npos);
  EXPECT_NE(md.find("| ours: attn-wp-l128-n6 |"), std::string::npos);
  EXPECT_EQ(md.find(".png)"), std::string::npos);
}

TEST(Report, EmptyRunsFolder) {
  ScratchDir out;
  ReportOptions o = fixture_options(out.path() / "out");
  o.runs_dir = (out.path() / "no-runs-here").string();
  o.bench_dir = (out.path() / "no-bench-here").string();
  generate_report(o);
  const std::string md = read_text(out.path() / "out" / "README.md");
  EXPECT_NE(md.find("| paper, WikiText-2 table |"), std::string::npos);
  EXPECT_NE(md.find("No paper-literal (future-pairing) run has been recorded yet"),
            std::string::npos);
  EXPECT_NE(md.find("No figures"), std::string::npos);
}

}  // namespace
}  // namespace grassaudit
