#pragma once
// Shared by the text tests: the real data folder (or a skip when it is truly absent) and
// throwaway temporary folders.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "text/data_dir.h"

namespace grassaudit::testing {

inline bool path_exists(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0;
}

// The shared data folder: the library's own resolution first, then the source tree's
// sibling (tests know GRASSAUDIT_SOURCE_DIR even before the library does). "" if absent.
inline std::string real_data_dir() {
  std::string d = resolve_data_dir("");
  if (path_exists(d + "/README.md")) return d;
#ifdef GRASSAUDIT_SOURCE_DIR
  d = std::string(GRASSAUDIT_SOURCE_DIR) + "/../shared/data";
  if (path_exists(d + "/README.md")) return d;
#endif
  return "";
}

// Path of a real data file, or "" (the caller skips) if the data is not installed.
inline std::string real_data_file(const std::string& relative) {
  std::string d = real_data_dir();
  if (d.empty() || !path_exists(d + "/" + relative)) return "";
  return d + "/" + relative;
}

#define GRASSAUDIT_REQUIRE_DATA(var, relative)                                   \
  const std::string var = ::grassaudit::testing::real_data_file(relative);       \
  if (var.empty()) GTEST_SKIP() << "shared data absent: " << (relative)

// A fresh folder under $TMPDIR, removed with its contents at scope exit.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "grassaudit-text-XXXXXX").string();
    char* p = ::mkdtemp(tmpl.data());
    if (!p) throw std::runtime_error("mkdtemp failed");
    path_ = p;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

  // Writes `contents` to <dir>/<name>, creating parent folders.
  std::string write(const std::string& name, const std::string& contents) const {
    std::string p = file(name);
    std::filesystem::create_directories(std::filesystem::path(p).parent_path());
    std::ofstream(p, std::ios::binary) << contents;
    return p;
  }

 private:
  std::string path_;
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
