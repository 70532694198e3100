#pragma once
// Shared by the NLI tests: temporary folders, the shared data, running the built binary.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "text/data_dir.h"

namespace grassaudit::nli_testing {

inline std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline std::vector<nlohmann::json> read_jsonl(const std::string& path) {
  std::vector<nlohmann::json> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) out.push_back(nlohmann::json::parse(line));
  return out;
}

// The shared data folder holding snli/ and bert-base-uncased/, or "" (tests skip).
inline std::string snli_data_dir() {
  for (std::string d : {resolve_data_dir(""), std::string(GRASSAUDIT_SOURCE_DIR) + "/../shared/data"}) {
    if (std::filesystem::exists(d + "/snli/snli_1.0_dev.jsonl.gz") &&
        std::filesystem::exists(d + "/bert-base-uncased/vocab.txt"))
      return d;
  }
  return "";
}

#define GRASSAUDIT_REQUIRE_SNLI(var)                            \
  const std::string var = ::grassaudit::nli_testing::snli_data_dir(); \
  if (var.empty()) GTEST_SKIP() << "shared SNLI data absent"

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "grassaudit-nli-XXXXXX").string();
    char* p = ::mkdtemp(tmpl.data());
    if (!p) throw std::runtime_error("mkdtemp failed");
    path_ = p;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& rel) const { return path_ + "/" + rel; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

struct ProcessResult {
  int status = -1;  // exit status, or -1 if killed by a signal / timed out
  std::string out, err;
};

inline pid_t spawn_grassaudit(const std::vector<std::string>& args, const std::string& dir) {
  pid_t pid = fork();
  if (pid == 0) {
    std::string out = dir + "/stdout.txt", err = dir + "/stderr.txt";
    if (!freopen(out.c_str(), "w", stdout) || !freopen(err.c_str(), "w", stderr)) _exit(127);
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

inline ProcessResult run_grassaudit(const std::vector<std::string>& args, double timeout_s = 120) {
  TempDir io;
  ProcessResult r;
  r.status = wait_for(spawn_grassaudit(args, io.path()), timeout_s);
  r.out = read_text(io.file("stdout.txt"));
  r.err = read_text(io.file("stderr.txt"));
  return r;
}

#define GRASSAUDIT_REQUIRE_BINARY()                                     \
  if (!std::filesystem::exists(GRASSAUDIT_BINARY)) GTEST_SKIP() << "build/grassaudit not built"

}  // namespace grassaudit::nli_testing
