// Interruptions and training health, on a small fake corpus (seconds per run):
//  * SIGKILL at random moments, then --resume, over and over: every last.ckpt left behind loads,
//    and the finished run's losses are identical to an uninterrupted run's;
//  * SIGINT / SIGTERM: checkpoint written, exit 0 with a message, resumable, identical losses;
//  * a second SIGINT while stopping: ends at once, last.ckpt still loadable;
//  * a NaN loss (a learning rate of 1e30) stops training with one line naming the step, and
//    no non-finite checkpoint is written.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <cstdint>
#include <random>

#include "cli_training_runs.h"

namespace grassaudit::clitest {
namespace {

using nlohmann::json;

using Fixture = TrainingFixture;

TEST(CliInterrupt, SigkillAtRandomMomentsThenResumeGivesIdenticalLosses) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  Fixture f;
  const std::string ref = f.t.file("ref");
  auto r = f.cli.run(f.fresh(ref));
  ASSERT_EQ(r.status, 0) << show(r);
  const auto expected = record_keys(ref);
  ASSERT_GT(expected.size(), 20u);

  const std::string out = f.t.file("killed");
  // Each round kills the run after a random number (0..40) of new metrics records plus a random
  // 0..30 ms: during start-up, a training step, a checkpoint write, validation or the final test.
  std::mt19937 rng(20240601);
  std::uniform_int_distribution<int> records(0, 40);
  std::uniform_int_distribution<int> jitter_ms(0, 30);
  int kills = 0, fresh_starts = 0;
  bool finished = false;
  for (int round = 0; round < 40; ++round) {
    if (finished) {
      // On a fast machine a run can finish before its kill lands: start over until 6 kills
      // have happened, then let the last run finish.
      if (kills >= 6) break;
      fs::remove_all(out);
      finished = false;
    }
    const bool have_ckpt = fs::exists(out + "/checkpoints/last.ckpt");
    if (!have_ckpt) {
      fs::remove_all(out);  // killed before the first checkpoint: nothing to resume
      ++fresh_starts;
    }
    const size_t before = lines_of(read_text(out + "/metrics.jsonl")).size();
    Process p = f.cli.start(have_ckpt ? f.resume(out) : f.fresh(out));
    const size_t wait_for = kills < 6 ? static_cast<size_t>(records(rng)) : SIZE_MAX;  // then let it finish
    int status = -1;
    bool done = false;
    const auto t0 = std::chrono::steady_clock::now();
    while (!(done = exited(p, &status))) {
      // A resumed run first truncates metrics.jsonl to its checkpoint, so count from `before`
      // only once the file has grown past it.
      const size_t now = lines_of(read_text(out + "/metrics.jsonl")).size();
      if (wait_for != SIZE_MAX && now >= before + wait_for) break;
      ASSERT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 60);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (!done) {
      std::this_thread::sleep_for(std::chrono::milliseconds(jitter_ms(rng)));
      ::kill(p.pid, SIGKILL);
      RunResult k = finish(p, 30);
      if (k.signal == SIGKILL) ++kills;
      else ASSERT_EQ(k.status, 0) << show(k);  // it finished just before the kill
      finished = k.status == 0;
    } else {
      RunResult k = finish(p, 30);
      ASSERT_EQ(k.status, 0) << show(k);
      finished = true;
    }
    ASSERT_TRUE(LastCheckpointLoads(out)) << "after round " << round;
  }
  ASSERT_TRUE(finished);
  EXPECT_GE(kills, 6);
  RecordProperty("kills", kills);
  RecordProperty("fresh_starts", fresh_starts);
  EXPECT_TRUE(SameRecords(record_keys(out), expected));
  EXPECT_EQ(json::parse(read_text(out + "/summary.json")).value("test_loss", -1.0),
            json::parse(read_text(ref + "/summary.json")).value("test_loss", -1.0));
  // SIGKILL cannot clean up; only "<file>.tmp.<pid>" leftovers of an interrupted write may remain,
  // never a partial checkpoint under its real name (checked above by loading it).
}

void signal_then_resume(int sig) {
  Fixture f;
  const std::string ref = f.t.file("ref");
  auto r = f.cli.run(f.fresh(ref));
  ASSERT_EQ(r.status, 0) << show(r);

  const std::string out = f.t.file("sig");
  Process p = f.cli.start(f.fresh(out));
  // Wait for a few training steps (records in metrics.jsonl), then signal.
  const auto t0 = std::chrono::steady_clock::now();
  int status = 0;
  while (lines_of(read_text(out + "/metrics.jsonl")).size() < 5) {
    ASSERT_FALSE(exited(p, &status)) << read_text(p.io_dir + "/stderr.txt");
    ASSERT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 30);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ::kill(p.pid, sig);
  RunResult s = finish(p, 30);
  ASSERT_EQ(s.status, 0) << show(s);
  EXPECT_NE(s.err.find("stopped by signal " + std::to_string(sig)), std::string::npos) << s.err;
  EXPECT_NE(s.err.find("checkpoint saved to " + out + "/checkpoints/last.ckpt"), std::string::npos) << s.err;
  EXPECT_NE(s.err.find("--resume"), std::string::npos) << s.err;
  EXPECT_TRUE(LastCheckpointLoads(out));
  EXPECT_FALSE(fs::exists(out + "/summary.json"));
  EXPECT_TRUE(NoTempFiles(out));

  r = f.cli.run(f.resume(out));
  ASSERT_EQ(r.status, 0) << show(r);
  EXPECT_TRUE(SameRecords(record_keys(out), record_keys(ref)));
}

TEST(CliInterrupt, SigintSavesExits0AndResumesIdentically) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  signal_then_resume(SIGINT);
}

TEST(CliInterrupt, SigtermSavesExits0AndResumesIdentically) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  signal_then_resume(SIGTERM);
}

TEST(CliInterrupt, SecondSigintEndsAtOnceCheckpointStillLoads) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  Fixture f;
  const std::string out = f.t.file("run");
  Process p = f.cli.start(f.fresh(out));
  const auto t0 = std::chrono::steady_clock::now();
  int status = 0;
  while (lines_of(read_text(out + "/metrics.jsonl")).size() < 3) {
    ASSERT_FALSE(exited(p, &status)) << read_text(p.io_dir + "/stderr.txt");
    ASSERT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 30);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ::kill(p.pid, SIGINT);
  ::kill(p.pid, SIGINT);
  RunResult r = finish(p, 30);
  EXPECT_EQ(r.signal, 0) << show(r);
  EXPECT_TRUE(r.status == 130 || r.status == 0) << show(r);  // 0 if the first stop finished first
  EXPECT_TRUE(LastCheckpointLoads(out));
  if (fs::exists(out + "/checkpoints/last.ckpt")) {
    auto again = f.cli.run(f.resume(out));
    EXPECT_EQ(again.status, 0) << show(again);
  }
}

// lr 1e30 without warmup or clipping: the first update makes the weights huge, the second
// step's loss is NaN.
json nan_config() {
  json c = tiny_config();
  c["train"]["lr"] = 1e30;
  c["train"]["warmup_steps"] = 0;
  c["train"]["clip"] = 0.0;
  return c;
}

TEST(CliHealth, NanLossStopsWithOneLineAndNoNonFiniteCheckpoint) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  Fixture f(400, nan_config());
  const std::string out = f.t.file("run");
  auto r = f.cli.run(f.fresh(out));
  EXPECT_TRUE(IsOneLineError(r, "train", {"loss", "nan", "step"}, false));
  EXPECT_TRUE(LastCheckpointLoads(out));
  EXPECT_FALSE(fs::exists(out + "/summary.json"));
  EXPECT_TRUE(NoTempFiles(out));
  // No record of the NaN step was written as if it were a loss.
  for (const auto& line : lines_of(read_text(out + "/metrics.jsonl")))
    EXPECT_EQ(line.find("nan"), std::string::npos) << line;
}

// The error names the failing step as metrics.jsonl counts steps (from 1) and the newest
// checkpoint with finite weights, with its step. With lr 1e30 the loss of step 2 is NaN and
// last.ckpt holds step 1 (checkpoint_every 1): finite but already huge weights, which the message
// says ("the step just before"). "Last good" is "finite weights, finite loss when written";
// whether its next step would diverge again cannot be known without running it.
TEST(CliHealth, NanLossNamesStepAndLastGoodCheckpoint) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  Fixture f(400, nan_config());
  const std::string out = f.t.file("run");
  auto r = f.cli.run(f.fresh(out));
  ASSERT_TRUE(IsOneLineError(r, "train", {"loss is nan at step 2", out + "/checkpoints/last.ckpt (step 1",
                                          "the step just before"},
                             false));
  // The step the message names as good is the one last.ckpt holds, and metrics.jsonl agrees.
  int64_t last_logged = 0;
  for (const auto& line : lines_of(read_text(out + "/metrics.jsonl"))) {
    auto j = json::parse(line);
    if (j.value("type", "") == "train") last_logged = j["step"].get<int64_t>();
  }
  EXPECT_EQ(last_logged, 1);
}

// Without a checkpoint before the blow-up the message says so instead of naming a file.
TEST(CliHealth, NanLossBeforeAnyCheckpointSaysSo) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  json c = nan_config();
  c["train"]["checkpoint_every"] = 0;
  Fixture f(400, c);
  const std::string out = f.t.file("run");
  auto r = f.cli.run(f.fresh(out));
  EXPECT_TRUE(IsOneLineError(r, "train", {"loss is nan at step 2", "no checkpoint was written before it"}, false));
  EXPECT_FALSE(fs::exists(out + "/checkpoints/last.ckpt"));
}

// A run killed between creating a temporary and renaming it leaves "<file>.tmp.<pid>"; the next
// start in that folder removes it (the pid is dead) and keeps a live process's temporary.
TEST(CliInterrupt, ResumeRemovesTemporariesOfDeadWriters) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  Fixture f;
  const std::string out = f.t.file("run");
  auto r = f.cli.run({"train", "--config", f.config, "--data-dir", f.data, "--allow-other-data", "--out", out,
                      "--threads", "1", "--max-tokens", "128"});
  ASSERT_EQ(r.status, 0) << show(r);
  const pid_t dead = dead_pid();
  const std::string stale = fmt::format("{}/checkpoints/last.ckpt.tmp.{}", out, dead);
  const std::string live = fmt::format("{}/metrics.jsonl.tmp.{}", out, ::getpid());
  write_text(stale, "half a checkpoint");
  write_text(live, "another process is writing this");
  r = f.cli.run({"train", "--resume", out + "/checkpoints/last.ckpt", "--threads", "1", "--data-dir", f.data,
                 "--allow-other-data", "--max-tokens", "256"});
  ASSERT_EQ(r.status, 0) << show(r);
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_NE(r.err.find("removed " + stale), std::string::npos) << show(r);
  EXPECT_TRUE(fs::exists(live));
}

}  // namespace
}  // namespace grassaudit::clitest
