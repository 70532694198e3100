// Crash consistency of training runs: a run killed (SIGKILL: no handler, no flush) at ANY
// durable-write point, then resumed (or started again where no checkpoint existed yet), ends with
// exactly the uninterrupted run's files: metrics.jsonl record for record, the final weights,
// summary.json and the audit verdict. Every point is killed once (first pass), and once more with
// the resume itself killed at its own point of the same number (second pass). last.ckpt loads
// after every kill.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_crash_points.h"
#include "cli_training_runs.h"

namespace grassaudit::clitest {
namespace {

using nlohmann::json;

// Two short epochs (5 steps each), train records and last.ckpt at epoch ends only: a run with few
// write points, each kind of which a longer run repeats.
json few_points_config() {
  json c = tiny_config();
  c["train"]["checkpoint_every"] = 0;
  c["train"]["log_every"] = 1000;
  return c;
}

// What a finished run wrote, without what depends on the session (wall times, rates, the
// sessions' provenance).
struct RunFiles {
  std::vector<std::string> records;
  std::string final_weights;
  std::string summary;
  std::string audit;

  static RunFiles of(const std::string& out) {
    RunFiles f;
    for (const auto& line : lines_of(read_text(out + "/metrics.jsonl"))) {
      json j = json::parse(line);
      for (const char* k : {"elapsed", "tokens_per_second", "examples_per_second"}) j.erase(k);
      f.records.push_back(j.dump());
    }
    f.final_weights = loaded_weights_hash(out + "/checkpoints/last.ckpt");
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

::testing::AssertionResult SameFiles(const RunFiles& got, const RunFiles& want, const std::string& what) {
  auto r = SameRecords(got.records, want.records);
  if (!r) return r << what;
  if (got.final_weights != want.final_weights || got.final_weights.empty())
    return ::testing::AssertionFailure() << what << ": final weights differ (" << got.final_weights << " vs "
                                         << want.final_weights << ")";
  if (got.summary != want.summary)
    return ::testing::AssertionFailure() << what << ": summary.json differs\n" << got.summary << "\nwant\n" << want.summary;
  if (got.audit != want.audit) return ::testing::AssertionFailure() << what << ": audit differs " << got.audit;
  return ::testing::AssertionSuccess();
}

// A command's fresh and resume forms for one output folder.
struct Command {
  std::function<std::vector<std::string>(const std::string& out)> fresh, resume;
};

// Ends the run in `out` as a user would after a kill: resume from last.ckpt, or start again when
// the kill came before the first checkpoint.
::testing::AssertionResult FinishAfterKill(const Cli& cli, const Command& cmd, const std::string& out,
                                           const EnvList& env = {}) {
  const bool have_ckpt = fs::exists(out + "/checkpoints/last.ckpt");
  if (!have_ckpt) fs::remove_all(out);
  RunResult r = cli.run(have_ckpt ? cmd.resume(out) : cmd.fresh(out), 120, env);
  if (r.status == 0 || (!env.empty() && r.signal == SIGKILL)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << (have_ckpt ? "resume" : "fresh start") << " failed\n" << show(r);
}

// Both passes over every write point of `cmd`.
void kill_at_every_point(const TempDir& t, const Cli& cli, const Command& cmd) {
  const std::string ref = t.file("ref");
  RunResult r;
  const auto points = record_write_points(cli, cmd.fresh(ref), t.file("points.txt"), &r);
  ASSERT_EQ(r.status, 0) << show(r);
  const RunFiles want = RunFiles::of(ref);
  ASSERT_GE(points.size(), 20u) << "too few write points recorded";
  RecordProperty("write_points", static_cast<int>(points.size()));
  const int n_points = static_cast<int>(points.size());
  for (int pass = 1; pass <= 2; ++pass) {
    for (int n = 1; n <= n_points; ++n) {
      const std::string what = "pass " + std::to_string(pass) + ", killed at point " + points[n - 1];
      SCOPED_TRACE(what);
      const std::string out = t.file("kill");
      fs::remove_all(out);
      bool killed = false;
      ASSERT_TRUE(KilledAt(cli, cmd.fresh(out), n, &killed));
      ASSERT_TRUE(killed) << "the uninterrupted run reached this point, so this one must";
      ASSERT_TRUE(LastCheckpointLoads(out));
      if (pass == 2) {  // the resume killed too, at its own n-th point (if it gets there)
        ASSERT_TRUE(FinishAfterKill(cli, cmd, out, kill_at(n)));
        ASSERT_TRUE(LastCheckpointLoads(out));
      }
      ASSERT_TRUE(FinishAfterKill(cli, cmd, out));
      if (!fs::exists(out + "/summary.json"))  // the second pass's resume may end before its kill
        ASSERT_TRUE(FinishAfterKill(cli, cmd, out));
      ASSERT_TRUE(SameFiles(RunFiles::of(out), want, what));
      EXPECT_TRUE(NoTempFiles(out));
    }
  }
}

TEST(CliCrashConsistency, LmRunKilledAtEveryWritePointResumesToTheSameFiles) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  TrainingFixture f(40, few_points_config(), 30);
  Command cmd{[&](const std::string& out) { return f.fresh(out); },
              [&](const std::string& out) { return f.resume(out); }};
  kill_at_every_point(f.t, f.cli, cmd);
}

}  // namespace
}  // namespace grassaudit::clitest
