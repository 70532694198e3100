// Crash consistency of training runs: a run killed (SIGKILL: no handler, no flush) at ANY
// durable-write point, then resumed (or started again where no checkpoint existed yet), ends with
// exactly the uninterrupted run's files: the metrics log(s) record for record, the final weights,
// summary.json and the audit verdict. Every point is killed, and every resume is killed too, at
// its own point of the same number, then resumed again. The kills are copies of the run's folder
// taken at each point of one run (write_points.h: the state a SIGKILL there leaves), checked
// against real kills at three points. The last checkpoint loads after every kill. Both trainers:
// the language model and SNLI.
#include <gtest/gtest.h>

#include <torch/version.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_crash_points.h"
#include "cli_training_runs.h"
#include "support/test_support_common.h"

namespace grassaudit::clitest {
namespace {

using nlohmann::json;

// A trainer's command for one output folder, and how its checkpoints are read.
struct Command {
  std::function<std::vector<std::string>(const std::string& out)> fresh, resume;
  std::function<std::string(const std::string& checkpoint)> weights_hash;  // "" when it does not load
};

// What a finished run wrote, without what depends on the session (wall times, rates, the
// sessions' provenance).
struct RunFiles {
  std::vector<std::string> records;  // every metrics*.jsonl, in name order
  std::string final_weights, summary, audit;

  static RunFiles of(const std::string& out, const Command& cmd) {
    RunFiles f;
    std::vector<std::string> logs;
    for (const auto& name : list_files(out))
      if (name.rfind("metrics", 0) == 0 && name.find(".jsonl") != std::string::npos) logs.push_back(name);
    std::sort(logs.begin(), logs.end());
    for (const auto& log : logs)
      for (const auto& line : lines_of(read_text(out + "/" + log))) {
        json j = json::parse(line);
        for (const char* k : {"elapsed", "tokens_per_second", "examples_per_second"}) j.erase(k);
        f.records.push_back(log + " " + j.dump());
      }
    f.final_weights = cmd.weights_hash(out + "/checkpoints/last.ckpt");
    json s = json::parse(read_text(out + "/summary.json"));
    for (const char* k : {"wall_seconds", "train_seconds", "tokens_per_second", "provenance", "allreduce_seconds",
                          "wall_seconds_per_seed"})
      s.erase(k);
    f.summary = s.dump(1);
    if (fs::exists(out + "/audit.json")) {
      json a = json::parse(read_text(out + "/audit.json"));
      f.audit = json{{"verdict", a["verdict"]}, {"leak_horizon", a["leak_horizon"]},
                     {"weights_sha256", a["weights_sha256"]}}.dump();
    }
    return f;
  }
};

::testing::AssertionResult SameFiles(const RunFiles& got, const RunFiles& want) {
  auto r = SameRecords(got.records, want.records);
  if (!r) return r;
  if (got.final_weights != want.final_weights || got.final_weights.empty())
    return ::testing::AssertionFailure() << "final weights differ (" << got.final_weights << " vs "
                                         << want.final_weights << ")";
  if (got.summary != want.summary)
    return ::testing::AssertionFailure() << "summary.json differs\n" << got.summary << "\nwant\n" << want.summary;
  if (got.audit != want.audit) return ::testing::AssertionFailure() << "audit differs " << got.audit;
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult CheckpointLoadsIfPresent(const std::string& out, const Command& cmd) {
  const std::string ck = out + "/checkpoints/last.ckpt";
  if (!fs::exists(ck) || !cmd.weights_hash(ck).empty()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << ck << " does not load";
}

// Ends the run in `out` as a user would after a kill: resume from last.ckpt, or start again when
// the kill came before the first checkpoint. With `env` (a kill switch) it may be killed again.
::testing::AssertionResult FinishAfterKill(const Cli& cli, const Command& cmd, const std::string& out,
                                           const EnvList& env = {}) {
  const bool have_ckpt = fs::exists(out + "/checkpoints/last.ckpt");
  if (!have_ckpt) fs::remove_all(out);
  RunResult r = cli.run(have_ckpt ? cmd.resume(out) : cmd.fresh(out), 120, env);
  if (r.status == 0 || (!env.empty() && r.signal == SIGKILL)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << (have_ckpt ? "resume" : "fresh start") << " failed\n" << show(r);
}

// A copy of `from` (a snapshot, write_points.h) as `to`, or no `to` where there is none.
void restore_snapshot(const std::string& from, const std::string& to) {
  fs::remove_all(to);
  fs::create_directories(fs::path(to).parent_path());
  if (fs::exists(from)) fs::copy(from, to, fs::copy_options::recursive);
}

// Every file and folder under `dir`, relative, with whether it is empty.
std::vector<std::string> tree_of(const std::string& dir) {
  std::vector<std::string> out;
  if (!fs::exists(dir)) return out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    out.push_back(fs::relative(e.path(), dir).string() + (e.is_regular_file() && e.file_size() == 0 ? " (empty)" : ""));
  std::sort(out.begin(), out.end());
  return out;
}

// Every write point of `cmd` killed (those with n % parts == part): one recorded run leaves, at
// each of its points, a copy of its folder, which is what a SIGKILL there leaves (write_points.h,
// GRASSAUDIT_SNAPSHOT_*). From each, the user's resume runs to the end and must write what the
// uninterrupted run wrote; that resume's own n-th point is copied too, and from there (the resume
// killed at its n-th point) the run is resumed again and must end the same. A few points are
// killed for real as well: the same files and folders as their copies (the copy is the kill).
void kill_at_every_point(const TempDir& t, const Cli& cli, const Command& cmd, int part, int parts) {
  // A first run fills the token cache, so every later run reaches the same points. The runs
  // compared are all called "run" (a summary names its run by the folder).
  RunResult r = cli.run(cmd.fresh(t.file("warm/run")), 120);
  ASSERT_EQ(r.status, 0) << show(r);
  const std::string ref = t.file("ref/run"), snaps = t.file("snaps");
  r = cli.run(cmd.fresh(ref), 120,
              {{"GRASSAUDIT_WRITE_POINTS", t.file("points.txt")}, {"GRASSAUDIT_SNAPSHOT_OF", ref},
               {"GRASSAUDIT_SNAPSHOT_TO", snaps}});
  ASSERT_EQ(r.status, 0) << show(r);
  const auto points = lines_of(read_text(t.file("points.txt")));
  const RunFiles want = RunFiles::of(ref, cmd);
  ASSERT_GE(points.size(), 20u) << "too few write points recorded";
  ::testing::Test::RecordProperty("write_points", static_cast<int>(points.size()));
  const int N = static_cast<int>(points.size());
  ASSERT_TRUE(fs::exists(snaps + "/" + std::to_string(N))) << "no copy at the last point: the switch did not run";
  for (int n : {1, N / 2, N}) {  // the copy is the kill: the first point, one inside, the last
    if (n % parts != part) continue;
    SCOPED_TRACE("killed for real at point " + points[n - 1]);
    const std::string out = t.file("real/run");
    fs::remove_all(out);
    bool killed = false;
    ASSERT_TRUE(KilledAt(cli, cmd.fresh(out), n, &killed));
    ASSERT_TRUE(killed);
    EXPECT_EQ(tree_of(out), tree_of(snaps + "/" + std::to_string(n)));
  }
  int resumes_killed = 0;
  for (int n = 1; n <= N; ++n) {
    if (n % parts != part) continue;
    SCOPED_TRACE("killed at point " + points[n - 1]);
    const std::string out = t.file("kill/run"), resumed = t.file("resume-snaps");
    restore_snapshot(snaps + "/" + std::to_string(n), out);
    ASSERT_TRUE(CheckpointLoadsIfPresent(out, cmd));
    fs::remove_all(resumed);
    ASSERT_TRUE(FinishAfterKill(cli, cmd, out,
                                {{"GRASSAUDIT_SNAPSHOT_OF", out}, {"GRASSAUDIT_SNAPSHOT_TO", resumed},
                                 {"GRASSAUDIT_SNAPSHOT_AT", std::to_string(n)}}));
    if (!fs::exists(out + "/summary.json")) ASSERT_TRUE(FinishAfterKill(cli, cmd, out));
    ASSERT_TRUE(SameFiles(RunFiles::of(out, cmd), want));
    EXPECT_TRUE(NoTempFiles(out));
    // The resume killed at its own n-th point (when it reached one), then resumed again.
    const std::string again = resumed + "/" + std::to_string(n);
    if (!fs::exists(again)) continue;
    ++resumes_killed;
    SCOPED_TRACE("and its resume killed at its point " + std::to_string(n));
    restore_snapshot(again, out);
    ASSERT_TRUE(CheckpointLoadsIfPresent(out, cmd));
    ASSERT_TRUE(FinishAfterKill(cli, cmd, out));
    if (!fs::exists(out + "/summary.json")) ASSERT_TRUE(FinishAfterKill(cli, cmd, out));
    ASSERT_TRUE(SameFiles(RunFiles::of(out, cmd), want));
    EXPECT_TRUE(NoTempFiles(out));
  }
  ::testing::Test::RecordProperty("resumes_killed", resumes_killed);
  EXPECT_GE(resumes_killed, N / parts / 2) << "most resumes reach the point of the same number";
}

// ---- the language model: two epochs of 6 steps, train records and last.ckpt at epoch ends ----

json few_points_config() {
  json c = tiny_config();
  c["train"]["checkpoint_every"] = 0;
  c["train"]["log_every"] = 1000;
  return c;
}

Command lm_command(const TrainingFixture& f) {
  return {[&f](const std::string& out) { return f.fresh(out); }, [&f](const std::string& out) { return f.resume(out); },
          [](const std::string& ck) { return loaded_weights_hash(ck); }};
}

// Two tests each (the odd and the even points), so that ctest runs the halves side by side.
TEST(CliCrashConsistency, LmRunKilledAtEveryOddWritePointAndDuringItsResumeEndsTheSame) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  TrainingFixture f(40, few_points_config(), 30);
  kill_at_every_point(f.t, f.cli, lm_command(f), 1, 2);
}

TEST(CliCrashConsistency, LmRunKilledAtEveryEvenWritePointAndDuringItsResumeEndsTheSame) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  TrainingFixture f(40, few_points_config(), 30);
  kill_at_every_point(f.t, f.cli, lm_command(f), 0, 2);
}

// ---- SNLI: two seeds of one epoch on the first pairs of the shared dev and test splits ----

// The first `pairs` lines of a gzip file, gzipped again.
void copy_first_lines(const std::string& from, const std::string& to, int pairs) {
  gzFile in = gzopen(from.c_str(), "rb");
  ASSERT_NE(in, nullptr) << from;
  fs::create_directories(fs::path(to).parent_path());
  gzFile out = gzopen(to.c_str(), "wb");
  ASSERT_NE(out, nullptr) << to;
  char line[1 << 16];
  for (int i = 0; i < pairs && gzgets(in, line, sizeof line); ++i) gzputs(out, line);
  gzclose(in);
  gzclose(out);
}

// A small SNLI folder (the shared BERT vocabulary, 60 pairs of dev and test), or "" without the
// shared data.
std::string small_snli(const TempDir& t) {
  const std::string shared = ::grassaudit::testing::find_shared_data_dir({"snli/snli_1.0_dev.jsonl.gz"});
  if (shared.empty()) return "";
  const std::string root = t.file("snli-data");
  for (const char* split : {"dev", "test"})
    copy_first_lines(shared + "/snli/snli_1.0_" + std::string(split) + ".jsonl.gz",
                     root + "/snli/snli_1.0_" + split + ".jsonl.gz", 60);
  fs::create_directories(root + "/bert-base-uncased");
  fs::copy(shared + "/bert-base-uncased/vocab.txt", root + "/bert-base-uncased/vocab.txt");
  return root;
}

Command nli_command(const std::string& data) {
  return {[data](const std::string& out) {
            return std::vector<std::string>{"train-nli", "--head", "grassmann", "--data-dir", data, "--out", out,
                                            "--epochs", "1", "--seeds", "1,2", "--batch", "8", "--lr", "2e-3",
                                            "--log-every", "1000", "--threads", "1"};
          },
          [data](const std::string& out) {
            return std::vector<std::string>{"train-nli", "--resume", out + "/checkpoints/last.ckpt", "--data-dir",
                                            data, "--threads", "1"};
          },
          [](const std::string& ck) { return loaded_nli_weights_hash(ck); }};
}

TEST(CliCrashConsistency, SnliRunKilledAtEveryOddWritePointAndDuringItsResumeEndsTheSame) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  TempDir t;
  Cli cli(t);
  const std::string data = small_snli(t);
  if (data.empty()) GTEST_SKIP() << "shared SNLI data absent";
  kill_at_every_point(t, cli, nli_command(data), 1, 2);
}

TEST(CliCrashConsistency, SnliRunKilledAtEveryEvenWritePointAndDuringItsResumeEndsTheSame) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  TempDir t;
  Cli cli(t);
  const std::string data = small_snli(t);
  if (data.empty()) GTEST_SKIP() << "shared SNLI data absent";
  kill_at_every_point(t, cli, nli_command(data), 0, 2);
}

}  // namespace
}  // namespace grassaudit::clitest

namespace grassaudit::clitest {
namespace {

// "step loss" of every train record past `after` and every epoch-end validation.
std::vector<std::string> losses_after(const std::string& out, int64_t after) {
  std::vector<std::string> v;
  for (const auto& line : lines_of(read_text(out + "/metrics.jsonl"))) {
    const json j = json::parse(line);
    const int64_t step = j["step"].get<int64_t>();
    if ((j["type"] == "train" && step > after) || is_epoch_end_validation(j))
      v.push_back(std::to_string(step) + " " + j["loss"].dump());
  }
  return v;
}

// A checkpoint from before the log's extent was recorded resumes by the old rule: records up to
// its step kept, the test figure and a torn last line cut (said so), and training goes on to the
// uninterrupted run's losses.
TEST(CliCrashConsistency, ACheckpointWrittenByTheOldCodeStillResumes) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  // The fixture was written by the LibTorch 1.13 build: under 2.x this is also the resume of a
  // 1.13 optimizer archive (its state keys are hex addresses that 2.x's own loader misreads).
  TempDir t;
  Cli cli(t);
  const std::string fixture_dir = fixture("old-format-run");
  const std::string data = fixture_dir + "/data";
  fs::copy(fixture_dir + "/run", t.file("old"), fs::copy_options::recursive);
  const std::string old_log = read_text(t.file("old/metrics.jsonl"));
  ASSERT_EQ(lines_of(old_log).size(), 4u);
  write_text(t.file("old/metrics.jsonl"), old_log + "{\"type\": \"train\", \"st");  // a kill mid-append
  auto r = cli.run({"train", "--resume", t.file("old/checkpoints/last.ckpt"), "--data-dir", data, "--allow-other-data",
                    "--threads", "1", "--max-tokens", "0"});
  ASSERT_EQ(r.status, 0) << show(r);
  EXPECT_NE(r.err.find("cut a torn last line"), std::string::npos) << show(r);
  const auto resumed = lines_of(read_text(t.file("old/metrics.jsonl")));
  ASSERT_GE(resumed.size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(resumed[i], lines_of(old_log)[i]) << "kept as written";
  int tests = 0;
  for (const auto& line : resumed) tests += json::parse(line).value("split", "") == "test";
  EXPECT_EQ(tests, 1) << "the old test figure is cut, the new one written once";

  r = cli.run({"train", "--config", fixture_dir + "/config.json", "--data-dir", data, "--allow-other-data", "--out",
               t.file("fresh"), "--threads", "1"});
  ASSERT_EQ(r.status, 0) << show(r);
  // The fixture's first steps were computed on the machine that wrote it: a CPU whose BLAS kernels
  // round differently in the last bit gives weights a few ulps apart at the checkpoint, which grow
  // to ~1e-7 in the losses that follow. Same records, same steps; losses equal to 1e-5 relative.
  const auto resumed_losses = losses_after(t.file("old"), 6), fresh_losses = losses_after(t.file("fresh"), 6);
  ASSERT_EQ(resumed_losses.size(), fresh_losses.size());
  for (size_t i = 0; i < resumed_losses.size(); ++i) {
    const auto a = resumed_losses[i].find(' '), b = fresh_losses[i].find(' ');
    EXPECT_EQ(resumed_losses[i].substr(0, a), fresh_losses[i].substr(0, b)) << "the same step";
    const double x = std::stod(resumed_losses[i].substr(a + 1)), y = std::stod(fresh_losses[i].substr(b + 1));
    EXPECT_NEAR(x, y, 1e-5 * std::abs(y)) << resumed_losses[i] << " vs " << fresh_losses[i];
  }
}

// The same 1.13 checkpoint audited by this build: the weights load as the bytes 1.13 wrote (their
// SHA-256, which hashes raw bytes, is the one 1.13 computes) and the audit decides as it does there.
TEST(CliCrashConsistency, ACheckpointWrittenByLibTorch113IsAuditedByThisBuild) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  TempDir t;
  Cli cli(t);
  const std::string ckpt = fixture("old-format-run") + "/run/checkpoints/last.ckpt";
  auto r = cli.run({"audit", "--checkpoint", ckpt, "--threads", "1", "--json", t.file("audit.json")});
  ASSERT_EQ(r.status, 0) << show(r);
  const auto audit = json::parse(read_text(t.file("audit.json")));
  EXPECT_EQ(audit["verdict"], "causal");
  EXPECT_EQ(audit["leak_horizon"], 0);
  EXPECT_EQ(audit["past_horizon"], 3) << "two Grassmann layers, offsets 1 and 2: 3 back";
  EXPECT_EQ(audit["weights_sha256"], "2babb80c27f24efd7d42cdca6286d888ed73e3da80e8adc0d02e7b8b6474ed05");
}

// Damage that is not a torn last line is an error naming the file and line, before anything is cut.
TEST(CliCrashConsistency, ADamagedRecordInsideTheCheckpointsExtentIsAnError) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  TrainingFixture f(40, few_points_config(), 30);
  const std::string out = f.t.file("run");
  auto r = f.cli.run(f.fresh(out));
  ASSERT_EQ(r.status, 0) << show(r);
  auto lines = lines_of(read_text(out + "/metrics.jsonl"));
  ASSERT_GE(lines.size(), 3u);
  lines[1] = lines[1].substr(0, lines[1].size() / 2);  // same place, half a record
  std::string text;
  for (const auto& l : lines) text += l + "\n";
  write_text(out + "/metrics.jsonl", text);
  r = f.cli.run(f.resume(out));
  EXPECT_TRUE(IsOneLineError(r, "train", {out + "/metrics.jsonl:2: damaged record"}, false));
  EXPECT_EQ(read_text(out + "/metrics.jsonl"), text) << "nothing cut";
}

}  // namespace
}  // namespace grassaudit::clitest
