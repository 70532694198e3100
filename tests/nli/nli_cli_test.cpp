// grassaudit train-nli as a user runs it (fork/exec build/grassaudit): bad flags, a tiny run and
// its artifacts, SIGINT + resume reproducing the uninterrupted run exactly.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "nli_test_support.h"

namespace grassaudit {
namespace {

using nli_testing::expect_usage_error;
using nli_testing::read_jsonl;
using nli_testing::read_text;
using nli_testing::run_grassaudit;
using nlohmann::json;

TEST(TrainNliCli, BadFlagsExit2WithOneLine) {
  GRASSAUDIT_REQUIRE_BINARY();
  nli_testing::TempDir t;
  expect_usage_error({"train-nli", "--bogus"}, "bogus");
  expect_usage_error({"train-nli"}, "--head");
  expect_usage_error({"train-nli", "--head", "lstm"}, "lstm");
  expect_usage_error({"train-nli", "--head", "grassmann", "--epochs", "0"}, "epochs");
  expect_usage_error({"train-nli", "--head", "grassmann", "--seeds", "1,x"}, "seeds");
  expect_usage_error({"train-nli", "--head", "grassmann", "--seed", "1", "--seeds", "2"}, "--seeds");
  expect_usage_error({"train-nli", "--head", "grassmann", "stray"}, "positional");
  expect_usage_error({"train-nli", "--resume", t.file("missing.ckpt"), "--head", "grassmann"}, "--resume");
  expect_usage_error({"train-nli", "--head", "grassmann", "--data-dir", t.file("nowhere"), "--out", t.file("o")},
                     "vocab.txt");
}

std::vector<std::string> tiny_args(const std::string& head, const std::string& data, const std::string& out,
                                   int epochs, const std::string& seeds, int examples = 64) {
  return {"train-nli",      "--head", head,
          "--data-dir",     data,
          "--out",          out,
          "--epochs",       std::to_string(epochs),
          "--seeds",        seeds,
          "--batch",        "8",
          "--lr",           "2e-3",
          "--max-examples", std::to_string(examples),
          "--log-every",    "1",
          "--threads",      "1"};
}

double mean_train_loss(const std::vector<json>& lines, double epoch_lo, double epoch_hi) {
  double s = 0;
  int n = 0;
  for (const auto& j : lines)
    if (j["type"] == "train" && j["epoch"].get<double>() > epoch_lo && j["epoch"].get<double>() <= epoch_hi) {
      s += j["loss"].get<double>();
      ++n;
    }
  return n ? s / n : 0;
}

TEST(TrainNliCli, TinyRunLearnsAndWritesWellFormedArtifacts) {
  GRASSAUDIT_REQUIRE_BINARY();
  GRASSAUDIT_REQUIRE_SNLI(data);
  nli_testing::TempDir t;
  const std::string out = t.file("runs/snli-grassmann");
  auto r = run_grassaudit(tiny_args("grassmann", data, out, 4, "1,2", 48), 120);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("parameters"), std::string::npos);
  EXPECT_NE(r.err.find("transformer head"), std::string::npos) << "both parameter counts are printed";

  const json cfg = json::parse(read_text(out + "/config.json"));
  EXPECT_EQ(cfg["model"]["head"], "grassmann");
  EXPECT_EQ(cfg["model"]["d_proj"], 64);
  EXPECT_EQ(cfg["model"]["window"], 8);
  EXPECT_EQ(cfg["train"]["epochs"], 4);

  const json s = json::parse(read_text(out + "/summary.json"));
  EXPECT_EQ(s["run"], "snli-grassmann");
  EXPECT_EQ(s["task"], "snli");
  EXPECT_EQ(s["head"], "grassmann");
  EXPECT_NE(s["features"].get<std::string>().find("DistilBERT"), std::string::npos);
  EXPECT_NE(s["protocol"].get<std::string>().find("dev"), std::string::npos);
  EXPECT_EQ(s["seeds"], json::array({1, 2}));
  ASSERT_EQ(s["val_acc"].size(), 2u);
  ASSERT_EQ(s["test_acc"].size(), 2u);
  for (const auto& a : s["test_acc"]) {
    EXPECT_GE(a.get<double>(), 0.0);
    EXPECT_LE(a.get<double>(), 1.0);
  }
  ASSERT_EQ(s["test_acc_pluecker_zeroed"].size(), 2u);
  for (const auto& a : s["test_acc_pluecker_zeroed"]) {
    EXPECT_GE(a.get<double>(), 0.0);
    EXPECT_LE(a.get<double>(), 1.0);
  }
  EXPECT_TRUE(s.contains("test_acc_pluecker_zeroed_mean"));
  EXPECT_GT(s["params"].get<int64_t>(), 0);
  EXPECT_EQ(s["epochs"], 4);
  EXPECT_GT(s["wall_seconds"].get<double>(), 0);
  EXPECT_EQ(s["threads"], 1);

  for (int seed : {1, 2}) {
    const auto lines = read_jsonl(out + "/metrics-seed" + std::to_string(seed) + ".jsonl");
    int evals = 0, tests = 0, ablations = 0;
    for (const auto& j : lines) {
      EXPECT_EQ(j["seed"], seed);
      if (j["type"] == "train") {
        for (const char* k : {"step", "epoch", "loss", "lr", "examples_per_second", "elapsed"})
          EXPECT_TRUE(j.contains(k)) << k;
      } else {
        ASSERT_EQ(j["type"], "eval");
        EXPECT_TRUE(j.contains("accuracy"));
        evals += j["split"] == "val";
        tests += j["split"] == "test" && !j.contains("ablation");
        ablations += j["split"] == "test" && j.value("ablation", "") == "pluecker_zeroed";
      }
    }
    EXPECT_EQ(evals, 4);
    EXPECT_EQ(tests, 1);
    EXPECT_EQ(ablations, 1);  // the Pluecker-zeroed test of the same weights (Grassmann head)
    // 48 pairs, 4 epochs: the training loss falls (the head can fit a small set).
    const double first = mean_train_loss(lines, 0, 1), last = mean_train_loss(lines, 3, 4);
    EXPECT_LT(last, first - 0.05) << "seed " << seed << ": first epoch " << first << ", last " << last;
  }
  EXPECT_TRUE(std::filesystem::exists(out + "/checkpoints/last.ckpt"));
  EXPECT_TRUE(std::filesystem::exists(out + "/checkpoints/best-seed1.ckpt"));

  // The report generator reads the summary.
  const std::string src = GRASSAUDIT_SOURCE_DIR;
  if (std::filesystem::exists(src + "/reference")) {
    auto rep = run_grassaudit({"report", "--runs", t.file("runs"), "--reference", src + "/reference", "--bench",
                               t.file("nobench"), "--out", t.file("report")},
                              60);
    EXPECT_EQ(rep.status, 0) << rep.err;
    EXPECT_NE(read_text(t.file("report/README.md")).find("snli-grassmann"), std::string::npos) << rep.out;
  }

  // A second fresh run into the same folder is refused.
  auto again = run_grassaudit(tiny_args("grassmann", data, out, 1, "1"), 60);
  EXPECT_EQ(again.status, 2);
  EXPECT_NE(again.err.find("already holds a run"), std::string::npos) << again.err;
}

TEST(TrainNliCli, SigintSavesExits0AndResumeMatchesUninterruptedRun) {
  GRASSAUDIT_REQUIRE_BINARY();
  GRASSAUDIT_REQUIRE_SNLI(data);
  nli_testing::TempDir t;
  const std::string a = t.file("a"), b = t.file("b");
  auto ra = run_grassaudit(tiny_args("transformer", data, a, 2, "3,4", 96), 120);
  ASSERT_EQ(ra.status, 0) << ra.err;

  pid_t pid = nli_testing::spawn_grassaudit(tiny_args("transformer", data, b, 2, "3,4", 96), t.path());
  const auto t0 = std::chrono::steady_clock::now();
  bool sent = false;
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < 90) {
    if (std::filesystem::exists(b + "/metrics-seed3.jsonl") && read_jsonl(b + "/metrics-seed3.jsonl").size() >= 5) {
      kill(pid, SIGINT);
      sent = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(sent) << read_text(t.file("stderr.txt"));
  ASSERT_EQ(nli_testing::wait_for(pid, 60), 0) << read_text(t.file("stderr.txt"));
  if (std::filesystem::exists(b + "/summary.json")) GTEST_SKIP() << "the run finished before the signal";
  EXPECT_NE(read_text(t.file("stderr.txt")).find("--resume"), std::string::npos);
  ASSERT_TRUE(std::filesystem::exists(b + "/checkpoints/last.ckpt"));

  auto rb = run_grassaudit({"train-nli", "--resume", b + "/checkpoints/last.ckpt", "--data-dir", data, "--threads", "1"}, 120);
  ASSERT_EQ(rb.status, 0) << rb.err;
  const json sa = json::parse(read_text(a + "/summary.json")), sb = json::parse(read_text(b + "/summary.json"));
  EXPECT_EQ(sa["val_acc"], sb["val_acc"]);
  EXPECT_EQ(sa["test_acc"], sb["test_acc"]);
  for (const char* seed : {"3", "4"}) {
    auto la = read_jsonl(a + "/metrics-seed" + std::string(seed) + ".jsonl");
    auto lb = read_jsonl(b + "/metrics-seed" + std::string(seed) + ".jsonl");
    ASSERT_EQ(la.size(), lb.size()) << seed;
    for (size_t i = 0; i < la.size(); ++i) {
      EXPECT_EQ(la[i]["step"], lb[i]["step"]);
      if (la[i]["type"] == "train") EXPECT_EQ(la[i]["loss"], lb[i]["loss"]) << "seed " << seed << " line " << i;
      else EXPECT_EQ(la[i]["accuracy"], lb[i]["accuracy"]);
    }
  }
}

}  // namespace
}  // namespace grassaudit
