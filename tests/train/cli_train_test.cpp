// The train and eval subcommands as a user runs them (fork/exec build/grassaudit): bad flags,
// SIGINT/SIGTERM, resume, eval of causal and leaky checkpoints.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "train_test_support.h"

namespace grassaudit {
namespace {

using testing::expect_usage_error;
using testing::read_json;
using testing::read_jsonl;
using testing::run_grassaudit;

TEST(TrainCli, BadFlagsExit2WithOneLine) {
  GRASSAUDIT_REQUIRE_BINARY();
  testing::TempDir t;
  expect_usage_error({"train", "--bogus"}, "bogus");
  expect_usage_error({"train", "--mixer", "past"}, "--preset");
  expect_usage_error({"train", "--mixer", "past", "--preset", "nope"}, "nope");
  expect_usage_error({"train", "--mixer", "nope", "--preset", "tiny"}, "nope");
  expect_usage_error({"train", "--preset", "tiny"}, "--mixer");
  expect_usage_error({"train", "--mixer", "past", "--preset", "tiny", "--epochs", "x"}, "epochs");
  expect_usage_error({"train", "--mixer", "past", "--preset", "tiny", "--epochs", "0"}, "epochs");
  expect_usage_error({"train", "--mixer", "past", "--preset", "tiny", "--tokenizer", "bpe"}, "tokenizer");
  expect_usage_error({"train", "--mixer", "past", "--preset", "tiny", "stray"}, "positional");
  expect_usage_error({"train", "--mixer", "past", "--preset", "tiny", "--device", "tpu"}, "device");
  expect_usage_error({"train", "--resume", t.file("missing.ckpt"), "--mixer", "past"}, "--resume");
  expect_usage_error({"train", "--resume", t.file("missing.ckpt")}, "missing.ckpt");
  {
    std::ofstream(t.file("bad.json")) << R"({"model": {"d_model": 32}, "trian": {}})";
    expect_usage_error({"train", "--mixer", "past", "--config", t.file("bad.json")}, "trian");
    std::ofstream(t.file("bad2.json")) << R"({"model": {"d_modle": 32}})";
    expect_usage_error({"train", "--mixer", "past", "--config", t.file("bad2.json")}, "d_modle");
  }
  expect_usage_error({"eval", "--split", "valid"}, "checkpoint");
  expect_usage_error({"eval", "--checkpoint", t.file("missing.ckpt"), "--split", "valid"}, "missing.ckpt");
  expect_usage_error({"eval", "--checkpoint", t.file("x.ckpt"), "--split", "train"}, "split");
}

TEST(TrainCli, CudaRefusedClearlyWithoutCuda) {
  GRASSAUDIT_REQUIRE_BINARY();
  GRASSAUDIT_REQUIRE_WIKITEXT(data);
  testing::TempDir t;
  auto r = run_grassaudit({"train", "--mixer", "past", "--preset", "tiny", "--device", "cuda", "--max-tokens",
                           "64", "--out", t.file("r"), "--threads", "1"});
  if (r.status == 0) GTEST_SKIP() << "this LibTorch has CUDA";
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("CUDA is not available"), std::string::npos) << r.err;
}

// Starts a long tiny run, waits for a few training records, sends `sig`.
void interrupt_run(int sig, const std::string& out, const std::string& io) {
  pid_t pid = testing::spawn_grassaudit(
      {"train", "--mixer", "past", "--preset", "tiny", "--out", out, "--threads", "1"}, io);
  const auto t0 = std::chrono::steady_clock::now();
  while (true) {
    if (std::filesystem::exists(out + "/metrics.jsonl") && read_jsonl(out + "/metrics.jsonl").size() >= 3) break;
    ASSERT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 90)
        << "no training records: " << testing::read_text(io + "/stderr.txt");
    int st = 0;
    ASSERT_EQ(waitpid(pid, &st, WNOHANG), 0) << "exited early: " << testing::read_text(io + "/stderr.txt");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  kill(pid, sig);
  const int status = testing::wait_for(pid, 60);
  const std::string err = testing::read_text(io + "/stderr.txt");
  EXPECT_EQ(status, 0) << err;
  EXPECT_NE(err.find("checkpoint saved"), std::string::npos) << err;
  EXPECT_NE(err.find("--resume"), std::string::npos) << err;
  EXPECT_TRUE(std::filesystem::exists(out + "/checkpoints/last.ckpt"));
  EXPECT_TRUE(std::filesystem::exists(out + "/config.json"));
  EXPECT_FALSE(std::filesystem::exists(out + "/summary.json"));
}

TEST(TrainCli, SigintSavesCheckpointExits0AndResumes) {
  GRASSAUDIT_REQUIRE_BINARY();
  GRASSAUDIT_REQUIRE_WIKITEXT(data);
  testing::TempDir t;
  std::filesystem::create_directories(t.file("io"));
  const std::string out = t.file("run");
  interrupt_run(SIGINT, out, t.file("io"));
  // Resume from the checkpoint for two more steps; the run then finishes with a summary.
  int64_t steps = 0;
  for (const auto& j : read_jsonl(out + "/metrics.jsonl"))
    if (j["type"] == "train") steps = std::max<int64_t>(steps, j["step"].get<int64_t>());
  ASSERT_GE(steps, 3);
  auto r = run_grassaudit({"train", "--resume", out + "/checkpoints/last.ckpt", "--max-tokens",
                           std::to_string((steps + 2) * 64), "--threads", "1"});
  ASSERT_EQ(r.status, 0) << r.err;
  auto s = read_json(out + "/summary.json");
  EXPECT_EQ(s["tokens_seen"], (steps + 2) * 64);
  EXPECT_EQ(s["audit"]["verdict"], "causal");
  // Training records continue without gaps or repeats.
  int64_t expect = 1;
  for (const auto& j : read_jsonl(out + "/metrics.jsonl"))
    if (j["type"] == "train") EXPECT_EQ(j["step"].get<int64_t>(), expect++);
  EXPECT_EQ(expect, steps + 3);
}

TEST(TrainCli, SigtermSavesCheckpointExits0) {
  GRASSAUDIT_REQUIRE_BINARY();
  GRASSAUDIT_REQUIRE_WIKITEXT(data);
  testing::TempDir t;
  std::filesystem::create_directories(t.file("io"));
  interrupt_run(SIGTERM, t.file("run"), t.file("io"));
}

TEST(TrainCli, TrainThenEvalCausalAndLeaky) {
  GRASSAUDIT_REQUIRE_BINARY();
  GRASSAUDIT_REQUIRE_WIKITEXT(data);
  testing::TempDir t;
  for (const std::string mixer : {"past", "future"}) {
    const std::string out = t.file(mixer);
    auto r = run_grassaudit({"train", "--mixer", mixer, "--preset", "tiny", "--max-tokens", "256", "--out", out,
                             "--threads", "1", "--seed", "5"});
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.err.find("threads"), std::string::npos);       // runtime banner
    EXPECT_NE(r.out.find("resolved config"), std::string::npos);  // resolved config printed
    auto s = read_json(out + "/summary.json");
    EXPECT_EQ(read_json(out + "/config.json")["train"]["seed"], 5);

    auto e = run_grassaudit({"eval", "--checkpoint", out + "/checkpoints/best.ckpt", "--split", "test", "--json",
                             out + "/eval.json", "--threads", "1"});
    ASSERT_EQ(e.status, 0) << e.err;  // 0 even when leaky: quarantined, not hidden
    auto j = read_json(out + "/eval.json");
    EXPECT_EQ(j["split"], "test");
    EXPECT_EQ(j["weights_sha256"], s["audit"]["weights_sha256"]);
    EXPECT_EQ(j["audit"]["weights_sha256"], s["audit"]["weights_sha256"]);
    EXPECT_GT(j["tokens"].get<int64_t>(), 0);
    if (mixer == "past") {
      EXPECT_EQ(j["audit"]["verdict"], "causal");
      ASSERT_TRUE(j.contains("ppl"));
      EXPECT_FALSE(j.contains("quarantined_ppl"));
      EXPECT_NEAR(j["ppl"].get<double>(), s["test_ppl"].get<double>(), 1e-9 * s["test_ppl"].get<double>());
      EXPECT_EQ(r.out.find("LEAKY"), std::string::npos);
      EXPECT_EQ(e.out.find("LEAKY"), std::string::npos);
    } else {
      EXPECT_EQ(j["audit"]["verdict"], "leaky");
      ASSERT_TRUE(j.contains("quarantined_ppl"));
      EXPECT_FALSE(j.contains("ppl"));
      EXPECT_NEAR(j["quarantined_ppl"].get<double>(), s["quarantined_test_ppl"].get<double>(),
                  1e-9 * s["quarantined_test_ppl"].get<double>());
      EXPECT_NE(r.out.find("LEAKY"), std::string::npos) << r.out;
      EXPECT_NE(e.out.find("LEAKY"), std::string::npos) << e.out;
      EXPECT_NE(e.out.find("NOT a valid perplexity"), std::string::npos) << e.out;
    }
  }
}

TEST(TrainCli, ConfigFileRoundTrip) {
  GRASSAUDIT_REQUIRE_BINARY();
  GRASSAUDIT_REQUIRE_WIKITEXT(data);
  testing::TempDir t;
  auto a = run_grassaudit({"train", "--mixer", "attention", "--preset", "tiny", "--max-tokens", "128", "--out",
                           t.file("a"), "--threads", "1", "--d-model", "24", "--heads", "3"});
  ASSERT_EQ(a.status, 0) << a.err;
  // The saved config.json is a valid --config (mixer included) and reproduces the run.
  auto b = run_grassaudit({"train", "--config", t.file("a/config.json"), "--out", t.file("b"), "--threads", "1"});
  ASSERT_EQ(b.status, 0) << b.err;
  EXPECT_EQ(read_json(t.file("a/config.json")), read_json(t.file("b/config.json")));
  EXPECT_EQ(read_json(t.file("a/config.json"))["model"]["d_model"], 24);
  EXPECT_EQ(read_json(t.file("a/summary.json"))["test_ppl"], read_json(t.file("b/summary.json"))["test_ppl"]);
}

}  // namespace
}  // namespace grassaudit
