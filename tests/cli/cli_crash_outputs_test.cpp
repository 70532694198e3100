// Crash consistency of single-file outputs: `audit --json/--leak-map` and `report` killed
// (SIGKILL) at each of their durable-write points leave every output file either as it was
// before the command or as the finished command writes it, never partial.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_crash_points.h"

namespace grassaudit::clitest {
namespace {

const std::string kOld = "the file as it was before the command\n";

// Each file of `want` (path -> finished bytes) must hold kOld or, through `same`, the finished
// contents.
using SameAsFinished = std::function<bool(const std::string& path, const std::string& got, const std::string& want)>;

::testing::AssertionResult OldOrNew(const std::map<std::string, std::string>& want, const SameAsFinished& same) {
  for (const auto& [path, bytes] : want) {
    const std::string got = read_text(path);
    if (got != kOld && !same(path, got, bytes))
      return ::testing::AssertionFailure() << path << " is neither the old file nor the finished one ("
                                           << got.size() << " bytes)";
  }
  return ::testing::AssertionSuccess();
}

// Records the points of `args`, keeps the finished files it wrote, then kills it at each point
// with every output file first set to kOld.
void kill_outputs_at_every_point(const TempDir& t, const Cli& cli, const std::vector<std::string>& args,
                                 const std::vector<std::string>& outputs, const SameAsFinished& same) {
  RunResult r;
  const auto points = record_write_points(cli, args, t.file("points.txt"), &r);
  ASSERT_EQ(r.status, 0) << show(r);
  ASSERT_FALSE(points.empty());
  ::testing::Test::RecordProperty("write_points", static_cast<int>(points.size()));
  std::map<std::string, std::string> want;
  for (const auto& p : outputs) want[p] = read_text(p);
  for (int n = 1; n <= static_cast<int>(points.size()); ++n) {
    SCOPED_TRACE("killed at point " + points[n - 1]);
    for (const auto& p : outputs) write_text(p, kOld);
    bool killed = false;
    ASSERT_TRUE(KilledAt(cli, args, n, &killed));
    ASSERT_TRUE(killed);
    ASSERT_TRUE(OldOrNew(want, same));
  }
}

bool same_bytes(const std::string&, const std::string& got, const std::string& want) { return got == want; }

TEST(CliCrashOutputs, AuditJsonAndLeakMapAreOldOrNewAtEveryKill) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  TempDir t;
  Cli cli(t);
  const std::string json_path = t.file("out/audit.json"), map_path = t.file("out/leak.csv");
  fs::create_directories(t.file("out"));
  const std::vector<std::string> args{"audit", "--model", fixture("ok_causal.pt"), "--input", "features:4",
                                      "--seq-len", "8", "--trials", "1", "--threads", "1", "--json", json_path,
                                      "--leak-map", map_path};
  // The audit JSON holds timings: a finished file is one whole document with the same verdict.
  auto same = [&](const std::string& path, const std::string& got, const std::string& want) {
    if (path != json_path) return got == want;
    if (!nlohmann::json::accept(got)) return false;
    return nlohmann::json::parse(got)["verdict"] == nlohmann::json::parse(want)["verdict"];
  };
  kill_outputs_at_every_point(t, cli, args, {json_path, map_path}, same);
}

TEST(CliCrashOutputs, ReportFilesAreOldOrNewAtEveryKill) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  TempDir t;
  Cli cli(t);
  const std::string src = GRASSAUDIT_SOURCE_DIR;
  // Two runs (a causal and a leaky one) keep the report small: a table, three figures.
  fs::create_directories(t.file("runs"));
  for (const char* run : {"cpu-small-wordpiece-past-seed1", "cpu-small-wordpiece-future-seed1"})
    fs::copy(src + "/reports/runs/" + run, t.file(std::string("runs/") + run), fs::copy_options::recursive);
  const std::string out = t.file("report");
  const std::vector<std::string> args{"report", "--runs", t.file("runs"), "--reference", src + "/reference",
                                      "--bench", t.file("no-bench"), "--out", out};
  fs::create_directories(t.file("no-bench"));
  RunResult r = cli.run(args);
  ASSERT_EQ(r.status, 0) << show(r);
  std::vector<std::string> outputs;
  for (const auto& f : list_files(out))
    if (f.back() != '/') outputs.push_back(out + "/" + f);
  ASSERT_GE(outputs.size(), 2u);
  kill_outputs_at_every_point(t, cli, args, outputs, same_bytes);
}

}  // namespace
}  // namespace grassaudit::clitest
