#pragma once
// Shared by the NLI tests: temporary folders, the shared data, running the built binary. The
// generic pieces live in support/test_support_common.h (namespace grassaudit::testing) and are
// brought into grassaudit::nli_testing here under the names the NLI tests use.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/test_support_common.h"

namespace grassaudit::nli_testing {

using testing::ProcessResult;
using testing::read_jsonl;
using testing::read_text;
using testing::wait_for;

// The shared data folder holding snli/ and bert-base-uncased/, or "" (tests skip).
inline std::string snli_data_dir() {
  return testing::find_shared_data_dir({"snli/snli_1.0_dev.jsonl.gz", "bert-base-uncased/vocab.txt"});
}

#define GRASSAUDIT_REQUIRE_SNLI(var)                            \
  const std::string var = ::grassaudit::nli_testing::snli_data_dir(); \
  if (var.empty()) GTEST_SKIP() << "shared SNLI data absent"

// A fresh folder $TMPDIR/grassaudit-nli-XXXXXX, removed with its contents at scope exit.
class TempDir : public testing::PrefixedTempDir {
 public:
  TempDir() : PrefixedTempDir("grassaudit-nli") {}
};

// The child inherits the environment unchanged.
inline pid_t spawn_grassaudit(const std::vector<std::string>& args, const std::string& dir) {
  return testing::spawn_grassaudit_env(args, dir, {});
}

inline ProcessResult run_grassaudit(const std::vector<std::string>& args, double timeout_s = 120) {
  return testing::run_grassaudit_env(args, timeout_s, "grassaudit-nli", {});
}

// A usage error from `grassaudit args`: exit 2, one stderr line naming `needle`.
inline void expect_usage_error(const std::vector<std::string>& args, const std::string& needle) {
  testing::expect_usage_error_result(run_grassaudit(args, 60), needle);
}

}  // namespace grassaudit::nli_testing
