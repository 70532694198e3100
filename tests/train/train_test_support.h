#pragma once
// Shared by the trainer tests: temporary folders, the shared data and token cache, running the
// built binary, reading JSON artifacts. The generic pieces live in support/test_support_common.h.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "support/test_support_common.h"

namespace grassaudit::testing {

// The shared data folder, or "" when absent (tests skip).
inline std::string shared_data_dir() { return find_shared_data_dir({"wikitext-2/wiki.train.tokens"}); }

#define GRASSAUDIT_REQUIRE_WIKITEXT(var)                         \
  const std::string var = ::grassaudit::testing::shared_data_dir(); \
  if (var.empty()) GTEST_SKIP() << "shared WikiText-2 data absent"

// The token cache the binary uses by default (build/.cache), so tests and CLI share one
// tokenization.
inline std::string shared_cache_dir() {
  return std::filesystem::path(GRASSAUDIT_BINARY).parent_path().string() + "/.cache";
}

// A fresh folder $TMPDIR/grassaudit-train-XXXXXX, removed with its contents at scope exit.
class TempDir : public PrefixedTempDir {
 public:
  TempDir() : PrefixedTempDir("grassaudit-train") {}
};

// The child runs with GRASSAUDIT_CACHE pointing at the shared token cache.
inline EnvVars train_child_env() { return {{"GRASSAUDIT_CACHE", shared_cache_dir()}}; }

// Starts build/grassaudit with `args` (stdout/stderr to files in `dir`); returns the pid.
inline pid_t spawn_grassaudit(const std::vector<std::string>& args, const std::string& dir) {
  return spawn_grassaudit_env(args, dir, train_child_env());
}

inline ProcessResult run_grassaudit(const std::vector<std::string>& args, double timeout_s = 120) {
  return run_grassaudit_env(args, timeout_s, "grassaudit-train", train_child_env());
}

// A usage error from `grassaudit args`: exit 2, one stderr line naming `needle`.
inline void expect_usage_error(const std::vector<std::string>& args, const std::string& needle) {
  expect_usage_error_result(run_grassaudit(args, 60), needle);
}

}  // namespace grassaudit::testing
