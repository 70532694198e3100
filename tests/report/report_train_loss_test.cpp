// The training-loss figure: "train" records of metrics.jsonl, read per LM run and drawn
// against the logged epoch, leaky runs dashed and labelled as such.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "report/figure_plan.h"
#include "report/published.h"
#include "report/report.h"
#include "report/runs.h"
#include "report_test_util.h"
#include "util/error.h"

namespace grassaudit {
namespace {

using testing::ScratchDir;
using testing::write_text;
namespace fs = std::filesystem;

const Published& published_figures() {
  static const Published p = load_published((testing::source_dir() / "reference").string());
  return p;
}

const char* const kCausalSummary =
    R"({"run": "r", "task": "lm", "mixer": "past", "seq_len": 128, "layers": 4,
        "audit": {"verdict": "causal", "leak_horizon": 0}, "best_valid_ppl": 300.0})";

std::string train_line(int step, double epoch, double loss) {
  return "{\"type\":\"train\",\"step\":" + std::to_string(step) +
         ",\"epoch\":" + std::to_string(epoch) + ",\"loss\":" + std::to_string(loss) +
         ",\"lr\":0.001,\"tokens_per_second\":900.0,\"elapsed\":1.0}\n";
}

// The plot clause of `data_file` in a gnuplot script (first occurrence, up to the line's end).
std::string plot_clause(const std::string& script, const std::string& data_file) {
  const size_t at = script.find("'data/" + data_file + "' using");
  if (at == std::string::npos) return "";
  return script.substr(at, script.find('\n', at) - at);
}

const Figure* find_figure(const FigurePlan& plan, const std::string& stem) {
  for (const auto& f : plan.figures)
    if (f.stem == stem) return &f;
  return nullptr;
}

const std::string* find_data(const FigurePlan& plan, const std::string& name) {
  for (const auto& [n, contents] : plan.data_files)
    if (n == name) return &contents;
  return nullptr;
}

RunRecord loss_lm_run(const std::string& name, const std::string& mixer, const std::string& verdict,
                 std::vector<TrainPoint> train) {
  RunRecord r;
  r.name = name;
  r.task = "lm";
  const MixerKind kind = parse_run_mixer(mixer, "test run");  // as load_run reads "mixer"
  r.family = kind.family;
  r.pairing = kind.pairing;
  r.seq_len = 128;
  r.layers = 4;
  r.audit.verdict = verdict;
  r.train = std::move(train);
  return r;
}

// --- parsing ---------------------------------------------------------------------------------

TEST(ReportTrainRecords, ReadFromMetricsSortedByEpoch) {
  ScratchDir dir;
  const fs::path run = dir.path() / "r";
  write_text(run / "summary.json", kCausalSummary);
  write_text(run / "metrics.jsonl",
             train_line(40, 0.5, 6.25) + train_line(20, 0.25, 7.5) +
                 // No loss, no epoch: not a point.
                 "{\"type\":\"train\",\"step\":50,\"epoch\":0.6}\n"
                 "{\"type\":\"train\",\"step\":55,\"loss\":6.0}\n" +
                 train_line(80, 1.0, 5.75) +
                 "{\"type\":\"eval\",\"epoch\":1,\"split\":\"valid\",\"ppl\":300.0,"
                 "\"loss\":5.70378,\"audit_verdict\":\"causal\"}\n");
  const RunRecord r = load_run(run.string());
  ASSERT_EQ(r.train.size(), 3u);
  EXPECT_DOUBLE_EQ(r.train[0].epoch, 0.25);
  EXPECT_DOUBLE_EQ(r.train[0].loss, 7.5);
  ASSERT_TRUE(r.train[0].step.has_value());
  EXPECT_EQ(*r.train[0].step, 20);
  EXPECT_DOUBLE_EQ(r.train[1].epoch, 0.5);
  EXPECT_DOUBLE_EQ(r.train[1].loss, 6.25);
  EXPECT_DOUBLE_EQ(r.train[2].epoch, 1.0);
  EXPECT_DOUBLE_EQ(r.train[2].loss, 5.75);
  // The eval record's "loss" is not a training point, and eval parsing is unchanged.
  ASSERT_EQ(r.evals.size(), 1u);
  EXPECT_DOUBLE_EQ(r.evals[0].ppl, 300.0);
}

TEST(ReportTrainRecords, TornLastLineIsSkipped) {
  ScratchDir dir;
  const fs::path run = dir.path() / "r";
  write_text(run / "summary.json", kCausalSummary);
  // The writer died mid-line: no closing brace, no newline.
  write_text(run / "metrics.jsonl",
             train_line(20, 0.5, 7.0) + train_line(40, 1.0, 6.0) +
                 "{\"type\":\"train\",\"step\":60,\"epoch\":1.5,\"lo");
  RunRecord r;
  ASSERT_NO_THROW(r = load_run(run.string()));
  ASSERT_EQ(r.train.size(), 2u);
  EXPECT_DOUBLE_EQ(r.train[1].loss, 6.0);

  // Same after an eval record: the evaluations before the torn line are all kept.
  write_text(run / "metrics.jsonl",
             train_line(40, 1.0, 6.0) +
                 "{\"type\":\"eval\",\"epoch\":1,\"split\":\"valid\",\"ppl\":300.0}\n"
                 "{\"type\":\"eval\",\"epoch\":2,\"spl\xC3");
  ASSERT_NO_THROW(r = load_run(run.string()));
  EXPECT_EQ(r.train.size(), 1u);
  EXPECT_EQ(r.evals.size(), 1u);
}

TEST(ReportTrainRecords, GarbledCompleteLineIsStillAnError) {
  // Only an unterminated last line counts as torn; a finished line that does not parse is a
  // broken artifact, named with its line.
  ScratchDir dir;
  const fs::path run = dir.path() / "r";
  write_text(run / "summary.json", kCausalSummary);
  write_text(run / "metrics.jsonl", train_line(20, 0.5, 7.0) + "{\"type\":\"train\",\"lo\n" +
                                        train_line(40, 1.0, 6.0));
  try {
    load_run(run.string());
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("r/metrics.jsonl:2"), std::string::npos) << e.what();
  }
}

TEST(ReportTrainRecords, WrongTypedLossNamesFileAndKey) {
  ScratchDir dir;
  const fs::path run = dir.path() / "r";
  write_text(run / "summary.json", kCausalSummary);
  write_text(run / "metrics.jsonl", "{\"type\":\"train\",\"step\":1,\"epoch\":0.1,\"loss\":\"high\"}\n");
  try {
    load_run(run.string());
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("r/metrics.jsonl"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'loss'"), std::string::npos) << e.what();
  }
}

TEST(ReportTrainRecords, NonLanguageModelRunsAreIgnored) {
  ScratchDir dir;
  const fs::path run = dir.path() / "snli";
  write_text(run / "summary.json",
             R"({"run": "snli", "task": "snli", "head": "grassmann", "seeds": [1],
                 "val_acc": [0.5], "test_acc": [0.5]})");
  write_text(run / "metrics.jsonl", train_line(50, 0.2, 1.1) + train_line(100, 0.4, 1.05));
  const RunRecord r = load_run(run.string());
  EXPECT_EQ(r.task, "snli");
  EXPECT_TRUE(r.train.empty());
}

// --- the plan --------------------------------------------------------------------------------

TEST(ReportTrainLossFigure, LeakyRunDashedAndLabelledCausalSolid) {
  const std::vector<RunRecord> runs = {
      loss_lm_run("attn", "attention", "causal", {{0.5, 20, 6.5}, {1.0, 40, 6.0}}),
      loss_lm_run("fut", "future", "leaky", {{0.5, 20, 4.0}, {1.0, 40, 1.25}}),
      loss_lm_run("past", "past", "causal", {{0.5, 20, 6.75}, {1.0, 40, 6.125}}),
  };
  const FigurePlan plan = plan_figures(runs, {}, published_figures());
  const Figure* f = find_figure(plan, "train-loss");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->title, "Training loss per step");
  EXPECT_NE(f->caption.find("metrics.jsonl"), std::string::npos) << f->caption;
  EXPECT_NE(f->caption.find("\"train\" records"), std::string::npos) << f->caption;
  EXPECT_NE(f->caption.find("Dashed lines are LEAKY"), std::string::npos) << f->caption;

  const std::string leaky = plot_clause(plan.script, "train-fut.dat");
  EXPECT_NE(leaky.find(" dt 2 "), std::string::npos) << leaky;
  EXPECT_NE(leaky.find("title 'fut (LEAKY: sees future tokens)'"), std::string::npos) << leaky;
  for (const std::string causal : {"attn", "past"}) {
    const std::string clause = plot_clause(plan.script, "train-" + causal + ".dat");
    EXPECT_NE(clause.find(" dt 1 "), std::string::npos) << clause;
    EXPECT_NE(clause.find("title '" + causal + "'"), std::string::npos) << clause;
    EXPECT_EQ(clause.find("LEAKY"), std::string::npos) << clause;
  }
  // Linear y axis labelled in nats; x is the logged epoch.
  EXPECT_NE(plan.script.find("set ylabel 'training cross-entropy (nats per token)'"),
            std::string::npos);
  EXPECT_NE(plan.script.find("set xlabel 'epoch (fractional, as logged with each step)'"),
            std::string::npos);
  EXPECT_NE(plan.script.find("set output 'out/train-loss.png'"), std::string::npos);
  EXPECT_NE(plan.script.find("set output 'out/train-loss.svg'"), std::string::npos);

  const std::string* data = find_data(plan, "train-fut.dat");
  ASSERT_NE(data, nullptr);
  EXPECT_EQ(*data, "0.5 4\n1 1.25\n");
}

TEST(ReportTrainLossFigure, UnauditedRunIsDottedAndSaysSo) {
  const FigurePlan plan =
      plan_figures({loss_lm_run("u", "past", "", {{1.0, 10, 6.0}})}, {}, published_figures());
  const std::string clause = plot_clause(plan.script, "train-u.dat");
  EXPECT_NE(clause.find(" dt 3 "), std::string::npos) << clause;
  EXPECT_NE(clause.find("title 'u (not audited)'"), std::string::npos) << clause;
  const Figure* f = find_figure(plan, "train-loss");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->caption.find("LEAKY"), std::string::npos) << f->caption;
}

TEST(ReportTrainLossFigure, RunWithoutTrainRecordsIsAbsent) {
  RunRecord no_train = loss_lm_run("quiet", "past", "causal", {});
  no_train.evals = {{1.0, 300.0, false}};
  const FigurePlan plan = plan_figures(
      {loss_lm_run("loud", "past", "causal", {{1.0, 10, 6.0}}), no_train}, {}, published_figures());
  ASSERT_NE(find_figure(plan, "train-loss"), nullptr);
  EXPECT_NE(find_data(plan, "train-loud.dat"), nullptr);
  EXPECT_EQ(find_data(plan, "train-quiet.dat"), nullptr);
  EXPECT_EQ(plan.script.find("train-quiet"), std::string::npos);
}

TEST(ReportTrainLossFigure, NotProducedWithoutTrainRecords) {
  RunRecord r = loss_lm_run("r", "past", "causal", {});
  r.evals = {{1.0, 300.0, false}};
  // A non-LM run's training points never make the figure either.
  RunRecord snli;
  snli.name = "snli";
  snli.task = "snli";
  snli.head = "grassmann";
  snli.train = {{0.5, 50, 1.1}, {1.0, 100, 1.0}};
  const FigurePlan plan = plan_figures({r, snli}, {}, published_figures());
  ASSERT_NE(find_figure(plan, "ppl"), nullptr);  // the other figures are still drawn
  EXPECT_EQ(find_figure(plan, "train-loss"), nullptr);
  EXPECT_EQ(plan.script.find("train-loss"), std::string::npos);
  for (const auto& [name, contents] : plan.data_files) EXPECT_NE(name.rfind("train-", 0), 0u) << name;

  EXPECT_TRUE(plan_figures({}, {}, published_figures()).figures.empty());
}

TEST(ReportTrainLossFigure, OtherFiguresUnchangedByTrainRecords) {
  RunRecord a = loss_lm_run("attn", "attention", "causal", {{0.5, 20, 6.5}, {1.0, 40, 6.0}});
  a.evals = {{1.0, 280.0, false}};
  RunRecord f = loss_lm_run("fut", "future", "leaky", {{1.0, 40, 1.25}});
  f.evals = {{1.0, 2.7, true}};
  f.leak_map = LeakMap{4, {{0, 1, 0.5}, {1, 2, 1e-3}}};
  const FigurePlan with = plan_figures({a, f}, {}, published_figures());
  a.train.clear();
  f.train.clear();
  const FigurePlan without = plan_figures({a, f}, {}, published_figures());

  ASSERT_EQ(with.figures.size(), without.figures.size() + 1);
  std::vector<std::string> stems;
  for (const auto& fig : with.figures)
    if (fig.stem != "train-loss") stems.push_back(fig.stem);
  ASSERT_EQ(stems.size(), without.figures.size());
  for (size_t i = 0; i < stems.size(); ++i) EXPECT_EQ(stems[i], without.figures[i].stem);
  for (const auto& [name, contents] : without.data_files) {
    const std::string* same = find_data(with, name);
    ASSERT_NE(same, nullptr) << name;
    EXPECT_EQ(*same, contents) << name;
  }
  // The script only gains the new figure's block.
  EXPECT_NE(with.script, without.script);
  std::string stripped = with.script;
  const size_t train_at = stripped.find("set output 'out/train-loss.png'");
  ASSERT_NE(train_at, std::string::npos);
  const size_t block = stripped.rfind("reset\nset terminal pngcairo", train_at);
  const std::string end_marker = "set output 'out/train-loss.svg'";
  const size_t svg_at = stripped.find(end_marker, train_at);
  ASSERT_NE(svg_at, std::string::npos);
  const size_t block_end = stripped.find("unset output\n", svg_at) + std::string("unset output\n").size();
  stripped.erase(block, block_end - block);
  EXPECT_EQ(stripped, without.script);
}

// --- end to end ------------------------------------------------------------------------------

TEST(ReportTrainLossFigure, FixtureRunsDrawTheLeakyRunDashed) {
  const auto runs = load_runs((testing::fixtures_dir() / "runs").string());
  const FigurePlan plan = plan_figures(runs, {}, published_figures());
  ASSERT_NE(find_figure(plan, "train-loss"), nullptr);
  const std::string leaky = plot_clause(plan.script, "train-future-wp-l128-n6.dat");
  EXPECT_NE(leaky.find(" dt 2 "), std::string::npos) << leaky;
  EXPECT_NE(leaky.find("(LEAKY: sees future tokens)"), std::string::npos) << leaky;
  const std::string causal = plot_clause(plan.script, "train-past-wp-l128-n6.dat");
  EXPECT_NE(causal.find(" dt 1 "), std::string::npos) << causal;
  const std::string* data = find_data(plan, "train-future-wp-l128-n6.dat");
  ASSERT_NE(data, nullptr);
  EXPECT_EQ(*data, "0.5 3.7563\n1 3.6563\n1.5 2.5105\n2 2.4105\n2.5 2.0647\n3 1.9647\n");
}

TEST(ReportTrainLossFigure, StalePictureRemovedWhenNoRunHasTrainRecords) {
  ScratchDir dir;
  const fs::path runs = dir.path() / "runs";
  testing::copy_fixture_runs(runs);
  ReportOptions o = testing::fixture_options(dir.path() / "out");
  o.runs_dir = runs.string();
  generate_report(o);
  const fs::path png = dir.path() / "out" / "figures" / "train-loss.png";
  ASSERT_TRUE(fs::exists(png));
  EXPECT_NE(testing::read_text(dir.path() / "out" / "README.md").find("**Training loss per step**"),
            std::string::npos);

  // Drop every train record; the figure and its pictures go away.
  for (const char* name : {"attn-wp-l128-n6", "future-wp-l128-n6", "past-wp-l128-n6"}) {
    const fs::path m = runs / name / "metrics.jsonl";
    std::string kept;
    const std::string text = testing::read_text(m);
    size_t start = 0;
    while (start < text.size()) {
      const size_t end = text.find('\n', start);
      const std::string line = text.substr(start, end - start + 1);
      if (line.find("\"type\":\"train\"") == std::string::npos) kept += line;
      start = end + 1;
    }
    write_text(m, kept);
  }
  generate_report(o);
  EXPECT_FALSE(fs::exists(png));
  EXPECT_FALSE(fs::exists(dir.path() / "out" / "figures" / "train-loss.svg"));
  const std::string md = testing::read_text(dir.path() / "out" / "README.md");
  EXPECT_EQ(md.find("Training loss per step"), std::string::npos);
  EXPECT_NE(md.find("(figures/ppl.png)"), std::string::npos);
}

}  // namespace
}  // namespace grassaudit
