// --time-budget, provenance in summary.json, and --loss-impl on a resumed run, as a user meets
// them through the binary on the tiny preset.
#include <gtest/gtest.h>
#include <torch/version.h>

#include <filesystem>
#include <regex>
#include <string>

#include "train/train_test_support.h"

namespace grassaudit {
namespace {

using testing::read_json;
using testing::read_jsonl;
using testing::run_grassaudit;

// A fresh tiny run of 128 tokens at one thread into `out`: the run the provenance and resume tests start from.
testing::ProcessResult train_tiny(const std::string& mixer, const std::string& out) {
  return run_grassaudit({"train", "--mixer", mixer, "--preset", "tiny", "--max-tokens", "128", "--out", out,
                         "--threads", "1"});
}

TEST(TrainBudget, ABudgetTooSmallForAnyStepStillEndsWithGatedResults) {
  GRASSAUDIT_REQUIRE_BINARY();
  GRASSAUDIT_REQUIRE_WIKITEXT(data);
  testing::TempDir t;
  const std::string out = t.file("run");
  // The closing audit and evaluations alone take longer than 0.001 s: no training step fits, yet
  // the run ends with its validation, its audited test figure and a summary saying why it stopped.
  auto r = run_grassaudit({"train", "--mixer", "past", "--preset", "tiny", "--max-tokens", "4096", "--out", out,
                           "--threads", "1", "--time-budget", "0.001"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("time budget of 0.001 s: training stopped at step 0"), std::string::npos) << r.err;
  auto s = read_json(out + "/summary.json");
  EXPECT_EQ(s["stopped_by"], "time_budget");
  EXPECT_DOUBLE_EQ(s["time_budget_seconds"].get<double>(), 0.001);
  EXPECT_EQ(s["steps"], 0);
  EXPECT_EQ(s["audit"]["verdict"], "causal");
  EXPECT_TRUE(s.contains("test_ppl"));
  EXPECT_GE(s["epochs_planned"].get<int64_t>(), 1);
}

TEST(TrainBudget, AGenerousBudgetChangesNothing) {
  GRASSAUDIT_REQUIRE_BINARY();
  GRASSAUDIT_REQUIRE_WIKITEXT(data);
  testing::TempDir t;
  auto r = run_grassaudit({"train", "--mixer", "past", "--preset", "tiny", "--max-tokens", "256", "--out",
                           t.file("run"), "--threads", "1", "--time-budget", "3600"});
  ASSERT_EQ(r.status, 0) << r.err;
  auto s = read_json(t.file("run") + "/summary.json");
  EXPECT_EQ(s["stopped_by"], "max_tokens");
  EXPECT_EQ(s["tokens_seen"], 256);
}

TEST(TrainBudget, BadBudgetsAreOneLineErrors) {
  GRASSAUDIT_REQUIRE_BINARY();
  testing::TempDir t;
  for (const std::string bad : {"0", "-5", "nan", "inf", "ten"}) {
    auto r = run_grassaudit({"train", "--mixer", "past", "--preset", "tiny", "--out", t.file("run"),
                             "--time-budget", bad});
    EXPECT_EQ(r.status, 2) << bad;
    EXPECT_NE(r.err.find("--time-budget"), std::string::npos) << bad << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

TEST(TrainProvenance, SummaryNamesCodeDataAndCommand) {
  GRASSAUDIT_REQUIRE_BINARY();
  GRASSAUDIT_REQUIRE_WIKITEXT(data);
  testing::TempDir t;
  const std::string out = t.file("run");
  auto r = train_tiny("attention", out);
  ASSERT_EQ(r.status, 0) << r.err;
  auto p = read_json(out + "/summary.json").at("provenance");
  EXPECT_TRUE(std::regex_match(p["git_commit"].get<std::string>(), std::regex("[0-9a-f]{40}|unknown")));
  EXPECT_TRUE(p["git_dirty"].is_boolean());
  EXPECT_FALSE(p["grassaudit_version"].get<std::string>().empty());
  EXPECT_EQ(p["libtorch_version"].get<std::string>(), TORCH_VERSION);  // the LibTorch this build links
  EXPECT_EQ(p["threads"], 1);
  EXPECT_EQ(p["world_size"], 1);
  EXPECT_EQ(p["device"], "cpu");
  EXPECT_NE(p["cpu"].get<std::string>().find(" cores"), std::string::npos) << p["cpu"];
  EXPECT_EQ(p["dropout_masks"], "splitmix64-counter-v1");
  const std::string cmd = p["command_line"];
  EXPECT_NE(cmd.find("train --mixer attention --preset tiny --max-tokens 128"), std::string::npos) << cmd;
  // The published files, by their SHA256SUMS next to them.
  const auto& d = p["data_sha256"];
  for (const std::string f : {"wikitext-2/wiki.train.tokens", "wikitext-2/wiki.valid.tokens",
                              "wikitext-2/wiki.test.tokens", "bert-base-uncased/vocab.txt"}) {
    ASSERT_TRUE(d.contains(f)) << f;
    const std::string sums = testing::read_text(data + "/" + f.substr(0, f.find('/')) + "/SHA256SUMS");
    EXPECT_NE(sums.find(d[f].get<std::string>()), std::string::npos) << f;
  }
}

// A resumed run's provenance names every session that trained it (steps, code, command), so a
// run continued by another build does not pass as the last build's alone.
TEST(TrainProvenance, AResumedRunListsItsSessions) {
  GRASSAUDIT_REQUIRE_BINARY();
  GRASSAUDIT_REQUIRE_WIKITEXT(data);
  testing::TempDir t;
  const std::string out = t.file("run");
  auto a = train_tiny("past", out);
  ASSERT_EQ(a.status, 0) << a.err;
  const auto first = read_json(out + "/summary.json");
  const int64_t steps_a = first["steps"];
  ASSERT_GT(steps_a, 0);
  ASSERT_EQ(first["provenance"]["sessions"].size(), 1u);
  EXPECT_EQ(first["provenance"]["sessions"][0]["first_step"], 0);
  EXPECT_EQ(first["provenance"]["sessions"][0]["last_step"], steps_a);
  auto b = run_grassaudit({"train", "--resume", out + "/checkpoints/last.ckpt", "--max-tokens", "256", "--threads", "1"});
  ASSERT_EQ(b.status, 0) << b.err;
  const auto s = read_json(out + "/summary.json");
  const auto& sessions = s["provenance"]["sessions"];
  ASSERT_EQ(sessions.size(), 2u) << sessions.dump();
  EXPECT_EQ(sessions[0]["first_step"], 0);
  EXPECT_EQ(sessions[0]["last_step"], steps_a);
  EXPECT_EQ(sessions[1]["first_step"], steps_a);
  EXPECT_EQ(sessions[1]["last_step"], s["steps"]);
  EXPECT_GT(s["steps"].get<int64_t>(), steps_a);
  EXPECT_NE(sessions[0]["command_line"].get<std::string>().find("--mixer past"), std::string::npos);
  EXPECT_NE(sessions[1]["command_line"].get<std::string>().find("--resume"), std::string::npos);
  EXPECT_EQ(sessions[1]["git_commit"], s["provenance"]["git_commit"]);
}

TEST(TrainLossImpl, AResumedRunMayChangeTheLossPath) {
  GRASSAUDIT_REQUIRE_BINARY();
  GRASSAUDIT_REQUIRE_WIKITEXT(data);
  testing::TempDir t;
  const std::string out = t.file("run");
  auto a = train_tiny("past", out);
  ASSERT_EQ(a.status, 0) << a.err;
  EXPECT_EQ(read_json(out + "/config.json")["train"]["loss_impl"], "fused");
  auto b = run_grassaudit({"train", "--resume", out + "/checkpoints/last.ckpt", "--max-tokens", "256",
                           "--loss-impl", "materialized", "--threads", "1"});
  ASSERT_EQ(b.status, 0) << b.err;
  EXPECT_EQ(b.err.find("not bit-reproducible"), std::string::npos) << b.err;  // same dropout mask rule
  EXPECT_EQ(read_json(out + "/config.json")["train"]["loss_impl"], "materialized");
  EXPECT_EQ(read_json(out + "/summary.json")["tokens_seen"], 256);
  auto c = run_grassaudit({"train", "--resume", out + "/checkpoints/last.ckpt", "--loss-impl", "bogus"});
  EXPECT_EQ(c.status, 2);
  EXPECT_NE(c.err.find("loss_impl must be fused or materialized, got 'bogus'"), std::string::npos) << c.err;
}

}  // namespace
}  // namespace grassaudit
