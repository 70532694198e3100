#pragma once
// The CLI reliability tests run build/grassaudit (GRASSAUDIT_BINARY) as a subprocess, the way a
// user does, and check: exit status, that stderr ends in ONE line "grassaudit <cmd>: error: ..."
// naming the file and the problem, that nothing crashed (no signal, no "terminate called"), and
// that no partial output file is left behind.
//
// Every run gets OMP_NUM_THREADS=1, GRASSAUDIT_DATA unset and GRASSAUDIT_CACHE pointing into the
// test's own temporary folder, so fake data never reaches the shared token cache.
#include <gtest/gtest.h>

#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "support/test_support_common.h"

namespace grassaudit::clitest {

namespace fs = std::filesystem;

inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline void write_text(const std::string& path, const std::string& bytes) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  if (!out) throw std::runtime_error("cannot write test file " + path);
}

inline std::string fixture(const std::string& name) {
  return std::string(GRASSAUDIT_SOURCE_DIR) + "/tests/cli/fixtures/" + name;
}

class TempDir : public ::grassaudit::testing::PrefixedTempDir {
 public:
  TempDir() : PrefixedTempDir("grassaudit-cli") {}
};

// Every regular file under `dir` (relative paths), for "nothing new was left behind" checks.
inline std::set<std::string> list_files(const std::string& dir) {
  std::set<std::string> out;
  std::error_code ec;
  if (!fs::exists(dir, ec)) return out;
  for (auto it = fs::recursive_directory_iterator(dir, ec); it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (ec) break;
    out.insert(fs::relative(it->path(), dir, ec).string() + (it->is_directory(ec) ? "/" : ""));
  }
  return out;
}

struct RunResult {
  int status = -1;  // exit status; -1 if killed by a signal (see `signal`)
  int signal = 0;
  std::string out, err;
  double seconds = 0;
};

struct Process {
  pid_t pid = -1;
  std::string io_dir;
  std::chrono::steady_clock::time_point start;
  bool reaped = false;  // waitpid already returned it (raw_status holds the status)
  int raw_status = 0;
};

// Starts build/grassaudit `args` with stdout/stderr going to files in io_dir.
inline Process spawn(const std::vector<std::string>& args, const std::string& io_dir,
                     const std::string& cache_dir,
                     const std::vector<std::pair<std::string, std::string>>& env = {}) {
  fs::create_directories(io_dir);
  Process p;
  p.io_dir = io_dir;
  p.start = std::chrono::steady_clock::now();
  p.pid = ::fork();
  if (p.pid == 0) {
    const std::string out = io_dir + "/stdout.txt", err = io_dir + "/stderr.txt";
    if (!freopen("/dev/null", "r", stdin) || !freopen(out.c_str(), "w", stdout) ||
        !freopen(err.c_str(), "w", stderr))
      _exit(127);
    ::setenv("OMP_NUM_THREADS", "1", 1);
    ::setenv("GRASSAUDIT_CACHE", cache_dir.c_str(), 1);
    ::unsetenv("GRASSAUDIT_DATA");
    // The settings a compute command re-executes itself to get (src/cli/main.cpp), given here:
    // the same settings are in force, and each run loads one process image instead of two. A
    // test that needs them unset says so in `env`.
    if (!std::getenv("OMP_WAIT_POLICY") && !std::getenv("GOMP_SPINCOUNT")) {
      ::setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
      if (!std::getenv("OPENBLAS_THREAD_TIMEOUT")) ::setenv("OPENBLAS_THREAD_TIMEOUT", "4", 1);
    }
    for (const auto& [k, v] : env) v.empty() ? ::unsetenv(k.c_str()) : ::setenv(k.c_str(), v.c_str(), 1);
    std::string bin = GRASSAUDIT_BINARY;
    std::vector<std::string> copy = args;
    std::vector<char*> argv{bin.data()};
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(bin.c_str(), argv.data());
    _exit(127);
  }
  return p;
}

// Waits up to timeout_s (then SIGKILLs; status -1, signal SIGKILL) and collects the output.
inline RunResult finish(const Process& p, double timeout_s) {
  RunResult r;
  int st = p.raw_status;
  while (!p.reaped) {
    pid_t w = ::waitpid(p.pid, &st, WNOHANG);
    if (w == p.pid) break;
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - p.start).count() > timeout_s) {
      ::kill(p.pid, SIGKILL);
      ::waitpid(p.pid, &st, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - p.start).count();
  if (WIFEXITED(st)) r.status = WEXITSTATUS(st);
  if (WIFSIGNALED(st)) r.signal = WTERMSIG(st);
  r.out = read_text(p.io_dir + "/stdout.txt");
  r.err = read_text(p.io_dir + "/stderr.txt");
  return r;
}

// Non-blocking: true once the process has ended (then finish() collects it without waiting).
inline bool exited(Process& p, int* status) {
  if (!p.reaped) {
    if (::waitpid(p.pid, &p.raw_status, WNOHANG) != p.pid) return false;
    p.reaped = true;
  }
  *status = WIFEXITED(p.raw_status) ? WEXITSTATUS(p.raw_status) : -1;
  return true;
}

// Runs the binary inside a test-owned folder: io files, token cache and outputs live in it.
class Cli {
 public:
  explicit Cli(const TempDir& dir) : dir_(dir.path()) {}
  RunResult run(const std::vector<std::string>& args, double timeout_s = 60,
          const std::vector<std::pair<std::string, std::string>>& env = {}) const {
    const std::string io = dir_ + "/io-" + std::to_string(++counter_);
    RunResult r = finish(spawn(args, io, cache(), env), timeout_s);
    std::error_code ec;
    fs::remove_all(io, ec);
    return r;
  }
  Process start(const std::vector<std::string>& args,
                const std::vector<std::pair<std::string, std::string>>& env = {}) const {
    return spawn(args, dir_ + "/io-" + std::to_string(++counter_), cache(), env);
  }
  std::string cache() const { return dir_ + "/cache"; }

 private:
  std::string dir_;
  mutable int counter_ = 0;
};

inline std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) out.push_back(line);
  return out;
}

inline std::string show(const RunResult& r) {
  return "exit " + std::to_string(r.status) + (r.signal ? " signal " + std::to_string(r.signal) : "") +
         "\n--- stderr ---\n" + r.err + "--- stdout (tail) ---\n" +
         (r.out.size() > 800 ? r.out.substr(r.out.size() - 800) : r.out);
}

// Exit 2, and stderr ENDS in exactly one line "grassaudit <cmd>: error: ..." holding every
// needle. With only_line, that line is all stderr holds (errors found while parsing flags or
// opening inputs, before any banner); without, earlier lines (the runtime banner, progress) are
// allowed but none of them may be another error or a crash report.
inline ::testing::AssertionResult IsOneLineError(const RunResult& r, const std::string& cmd,
                                                 const std::vector<std::string>& needles,
                                                 bool only_line = true) {
  if (r.signal) return ::testing::AssertionFailure() << "killed by signal\n" << show(r);
  if (r.status != 2) return ::testing::AssertionFailure() << "wanted exit 2\n" << show(r);
  const auto lines = lines_of(r.err);
  if (lines.empty()) return ::testing::AssertionFailure() << "empty stderr\n" << show(r);
  if (only_line && lines.size() != 1) return ::testing::AssertionFailure() << "wanted one stderr line\n" << show(r);
  const std::string prefix = "grassaudit " + cmd + ": error: ";
  const std::string& last = lines.back();
  if (last.rfind(prefix, 0) != 0) return ::testing::AssertionFailure() << "last line lacks '" << prefix << "'\n" << show(r);
  for (size_t i = 0; i + 1 < lines.size(); ++i)
    for (const char* bad : {"error", "terminate called", "what():", "Segmentation", "Aborted", "Exception"})
      if (lines[i].find(bad) != std::string::npos)
        return ::testing::AssertionFailure() << "stderr line " << i + 1 << " holds '" << bad << "'\n" << show(r);
  for (const auto& n : needles)
    if (last.find(n) == std::string::npos)
      return ::testing::AssertionFailure() << "error line lacks '" << n << "'\n" << show(r);
  return ::testing::AssertionSuccess();
}

// No "<name>.tmp.<pid>" leftovers of an atomic write anywhere under dir.
inline ::testing::AssertionResult NoTempFiles(const std::string& dir) {
  for (const auto& f : list_files(dir))
    if (f.find(".tmp.") != std::string::npos) return ::testing::AssertionFailure() << "left behind: " << dir << "/" << f;
  return ::testing::AssertionSuccess();
}

using ::grassaudit::testing::dead_pid;

#define GRASSAUDIT_CLI_REQUIRE_BINARY() GRASSAUDIT_REQUIRE_BINARY()

// ---- fake data ----

// A small deterministic WikiText-like folder: wikitext-2/wiki.{train,valid,test}.tokens (word
// vocabulary of 40 words incl. "<unk>") and bert-base-uncased/vocab.txt (the BERT special tokens
// plus those words). Train has `train_lines` lines (16 tokens per step at the tiny preset's L=16,
// batch 4: about 7 lines per step).
inline void make_fake_data(const std::string& root, int train_lines = 400, int eval_lines = 80) {
  std::vector<std::string> words;
  for (int i = 0; i < 39; ++i) words.push_back("w" + std::to_string(i));
  words.push_back("<unk>");
  uint64_t x = 88172645463325252ull;  // xorshift: same text on every machine
  auto next = [&] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  auto split = [&](const std::string& name, int lines) {
    std::string text;
    for (int i = 0; i < lines; ++i) {
      if (i % 9 == 0) {  // WikiText-style blank line and heading
        text += " \n = Heading " + std::to_string(i) + " = \n";
        continue;
      }
      int n = 3 + static_cast<int>(next() % 12);
      for (int k = 0; k < n; ++k) text += " " + words[next() % words.size()];
      text += " \n";
    }
    write_text(root + "/wikitext-2/wiki." + name + ".tokens", text);
  };
  split("train", train_lines);
  split("valid", eval_lines);
  split("test", eval_lines);
  std::string vocab = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n=\nheading\n";
  for (int i = 0; i < 39; ++i) vocab += "w" + std::to_string(i) + "\n";
  for (int i = 0; i < 10; ++i) vocab += "##" + std::to_string(i) + "\n" + std::to_string(i) + "\n";
  write_text(root + "/bert-base-uncased/vocab.txt", vocab);
}

}  // namespace grassaudit::clitest
