#pragma once
// Fault injection at every durable-write point (util/write_points.h): a command is run once
// uninterrupted with its points recorded, then killed by SIGKILL at each point in turn and
// finished the way a user would (resume, or start again where nothing was checkpointed). What
// each finished run wrote must equal the uninterrupted run's.
#include <gtest/gtest.h>
#include <signal.h>

#include <functional>
#include <string>
#include <vector>

#include "cli_support.h"

namespace grassaudit::clitest {

using EnvList = std::vector<std::pair<std::string, std::string>>;

inline EnvList kill_at(int n) { return {{"GRASSAUDIT_KILL_AT_WRITE", std::to_string(n)}}; }

// The points the uninterrupted command reached, one "N kind path" line each.
inline std::vector<std::string> record_write_points(const Cli& cli, const std::vector<std::string>& args,
                                                    const std::string& points_file, RunResult* result) {
  *result = cli.run(args, 120, {{"GRASSAUDIT_WRITE_POINTS", points_file}});
  return lines_of(read_text(points_file));
}

// Runs `args` with the kill switch at point n. True when the kill happened; false when the
// command ended first (it reached fewer points), which must then be a success.
inline ::testing::AssertionResult KilledAt(const Cli& cli, const std::vector<std::string>& args, int n,
                                           bool* killed) {
  RunResult r = cli.run(args, 120, kill_at(n));
  *killed = r.signal == SIGKILL;
  if (*killed || r.status == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "kill at point " << n << ": the run failed instead\n" << show(r);
}

}  // namespace grassaudit::clitest
