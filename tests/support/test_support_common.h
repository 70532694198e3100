#pragma once
// Test helpers shared by the per-library test support headers (text/test_support.h,
// train/train_test_support.h, nli/nli_test_support.h): throwaway temporary folders, reading
// files, finding the shared data folder, and running the built binary (build/grassaudit) with
// its stdout/stderr captured. Header-only and free of LibTorch, so every test target can use it.
// (tests/cli has its own, richer runner in cli/cli_support.h.)
#include <gtest/gtest.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "text/data_dir.h"

namespace grassaudit::testing {

// --- files ---------------------------------------------------------------------------------

inline bool path_exists(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0;
}

// The whole file as text ("" if it cannot be opened).
inline std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline nlohmann::json read_json(const std::string& path) { return nlohmann::json::parse(read_text(path)); }

// One JSON value per non-empty line.
inline std::vector<nlohmann::json> read_jsonl(const std::string& path) {
  std::vector<nlohmann::json> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) out.push_back(nlohmann::json::parse(line));
  return out;
}

// A fresh folder $TMPDIR/<prefix>-XXXXXX, removed with its contents at scope exit. Each test
// library derives its own TempDir from this with its own prefix (grassaudit-text, -train, -nli).
class PrefixedTempDir {
 public:
  explicit PrefixedTempDir(const std::string& prefix) {
    std::string tmpl = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
    char* p = ::mkdtemp(tmpl.data());
    if (!p) throw std::runtime_error("mkdtemp failed");
    path_ = p;
  }
  ~PrefixedTempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  PrefixedTempDir(const PrefixedTempDir&) = delete;
  PrefixedTempDir& operator=(const PrefixedTempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& rel) const { return path_ + "/" + rel; }

  // Writes `contents` to <dir>/<rel>, creating parent folders; returns the path.
  std::string write(const std::string& rel, const std::string& contents) const {
    std::string p = file(rel);
    std::filesystem::create_directories(std::filesystem::path(p).parent_path());
    std::ofstream(p, std::ios::binary) << contents;
    return p;
  }

 private:
  std::string path_;
};

// --- the shared data folder ----------------------------------------------------------------

// The shared data folder holding every one of `required` (paths relative to it), or "" (the
// caller skips): the library's own resolution first, then the source tree's sibling (tests
// know GRASSAUDIT_SOURCE_DIR even before the library does).
inline std::string find_shared_data_dir(std::initializer_list<const char*> required) {
  auto holds_all = [&](const std::string& d) {
    for (const char* rel : required)
      if (!path_exists(d + "/" + rel)) return false;
    return true;
  };
  std::string d = resolve_data_dir("");
  if (holds_all(d)) return d;
#ifdef GRASSAUDIT_SOURCE_DIR
  d = std::string(GRASSAUDIT_SOURCE_DIR) + "/../shared/data";
  if (holds_all(d)) return d;
#endif
  return "";
}

// --- running build/grassaudit (GRASSAUDIT_BINARY, defined for every test target) ---------------

// Environment variables set for the child on top of the inherited environment.
using EnvVars = std::vector<std::pair<std::string, std::string>>;

struct ProcessResult {
  int status = -1;  // exit status, or -1 if killed by a signal / timed out
  std::string out, err;
};

// Starts build/grassaudit with `args`, stdout/stderr to <dir>/stdout.txt and <dir>/stderr.txt,
// and `env` set on top of the inherited environment; returns the pid.
inline pid_t spawn_grassaudit_env(const std::vector<std::string>& args, const std::string& dir,
                                  const EnvVars& env) {
  pid_t pid = fork();
  if (pid == 0) {
    std::string out = dir + "/stdout.txt", err = dir + "/stderr.txt";
    if (!freopen(out.c_str(), "w", stdout) || !freopen(err.c_str(), "w", stderr)) _exit(127);
    for (const auto& [name, value] : env) setenv(name.c_str(), value.c_str(), 1);
    std::vector<char*> argv;
    std::string bin = GRASSAUDIT_BINARY;
    argv.push_back(bin.data());
    std::vector<std::string> copy = args;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(bin.c_str(), argv.data());
    _exit(127);
  }
  return pid;
}

// Waits up to timeout_s for `pid`, then SIGKILLs it. Returns the exit status, or -1 if it was
// killed by a signal or timed out.
inline int wait_for(pid_t pid, double timeout_s) {
  auto t0 = std::chrono::steady_clock::now();
  int status = 0;
  while (true) {
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > timeout_s) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// Runs build/grassaudit to completion (or timeout_s), capturing its output through a
// temporary folder named with `temp_prefix`.
inline ProcessResult run_grassaudit_env(const std::vector<std::string>& args, double timeout_s,
                                        const std::string& temp_prefix, const EnvVars& env) {
  PrefixedTempDir io(temp_prefix);
  ProcessResult r;
  r.status = wait_for(spawn_grassaudit_env(args, io.path(), env), timeout_s);
  r.out = read_text(io.file("stdout.txt"));
  r.err = read_text(io.file("stderr.txt"));
  return r;
}

// The pid of a process that has exited and been reaped (for "left by a dead process" cases).
inline pid_t dead_pid() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return pid;
}

inline bool binary_available() { return std::filesystem::exists(GRASSAUDIT_BINARY); }

#define GRASSAUDIT_REQUIRE_BINARY() \
  if (!::grassaudit::testing::binary_available()) GTEST_SKIP() << "build/grassaudit not built"

inline int count_lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

// Expects `r` to be a usage error: exit status 2 and exactly one stderr line, holding
// "error:" and `needle`.
inline void expect_usage_error_result(const ProcessResult& r, const std::string& needle) {
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("error:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << "wanted '" << needle << "' in: " << r.err;
}

// The message of the `Error` that `f` throws ("" when it throws none).
template <class Error>
std::string thrown_message(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace grassaudit::testing
