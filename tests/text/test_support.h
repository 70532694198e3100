#pragma once
// Shared by the text tests: the real data folder (or a skip when it is truly absent) and
// throwaway temporary folders.
#include <gtest/gtest.h>

#include <string>

#include "support/test_support_common.h"

namespace grassaudit::testing {

// The shared data folder: the library's own resolution first, then the source tree's
// sibling (tests know GRASSAUDIT_SOURCE_DIR even before the library does). "" if absent.
inline std::string real_data_dir() { return find_shared_data_dir({"README.md"}); }

// Path of a real data file, or "" (the caller skips) if the data is not installed.
inline std::string real_data_file(const std::string& relative) {
  std::string d = real_data_dir();
  if (d.empty() || !path_exists(d + "/" + relative)) return "";
  return d + "/" + relative;
}

#define GRASSAUDIT_REQUIRE_DATA(var, relative)                                   \
  const std::string var = ::grassaudit::testing::real_data_file(relative);       \
  if (var.empty()) GTEST_SKIP() << "shared data absent: " << (relative)

// A fresh folder $TMPDIR/grassaudit-text-XXXXXX, removed with its contents at scope exit.
class TempDir : public PrefixedTempDir {
 public:
  TempDir() : PrefixedTempDir("grassaudit-text") {}
};

// Asserts that `stmt` throws InputError whose message contains every one of `parts`.
#define EXPECT_INPUT_ERROR(stmt, ...)                                            \
  do {                                                                           \
    try {                                                                        \
      stmt;                                                                      \
      ADD_FAILURE() << "expected InputError from " #stmt;                        \
    } catch (const ::grassaudit::InputError& e) {                                \
      const std::string msg = e.what();                                          \
      EXPECT_EQ(msg.find('\n'), std::string::npos) << "multi-line: " << msg;    \
      for (const char* part : {__VA_ARGS__}) {                                   \
        EXPECT_NE(msg.find(part), std::string::npos)                             \
            << "message lacks \"" << part << "\": " << msg;                      \
      }                                                                          \
    }                                                                            \
  } while (0)

}  // namespace grassaudit::testing
