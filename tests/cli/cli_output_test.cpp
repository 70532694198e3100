// Unwritable outputs: a missing folder, a file where a folder should be, /proc, a directory where
// a file should be, and a full disk (/dev/full). Each is reported in one line naming the path,
// exit 2, and leaves no partial or temporary file behind; /dev/full and /dev/stdout stay the
// devices they are (an atomic write must not rename a temporary file over them).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "cli_checkpoints.h"
#include "cli_support.h"
#include "util/atomic_file.h"
#include "util/error.h"

namespace grassaudit::clitest {
namespace {

bool is_char_device(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISCHR(st.st_mode);
}

bool is_symlink(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
}

class DevicesIntact : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!is_char_device("/dev/full")) GTEST_SKIP() << "/dev/full is not available";
    stdout_was_link_ = is_symlink("/dev/stdout");
  }
  void TearDown() override {
    EXPECT_TRUE(is_char_device("/dev/full")) << "/dev/full was replaced";
    EXPECT_EQ(is_symlink("/dev/stdout"), stdout_was_link_) << "/dev/stdout was replaced";
    std::error_code ec;
    for (const auto& e : fs::directory_iterator("/dev", ec))  // top level only (not /dev/shm)
      EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << "left in /dev: " << e.path();
    // A regression here would break the machine for everyone else: put the devices back.
    if (!is_char_device("/dev/full") && ::geteuid() == 0) {
      ::unlink("/dev/full");
      ::mknod("/dev/full", S_IFCHR | 0666, ::makedev(1, 7));
      ::chmod("/dev/full", 0666);
    }
    if (stdout_was_link_ && !is_symlink("/dev/stdout") && ::geteuid() == 0) {
      ::unlink("/dev/stdout");
      ::symlink("/proc/self/fd/1", "/dev/stdout");
    }
  }
  bool stdout_was_link_ = false;
};

std::string expect_input_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not an InputError: " << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

using AtomicWrite = DevicesIntact;

TEST_F(AtomicWrite, FailuresNameThePathAndLeaveNothing) {
  TempDir t;
  write_text(t.file("afile"), "x");
  fs::create_directories(t.file("adir"));
  for (const std::string& path : {t.file("missing/x.json"), t.file("afile/x.json"), t.file("adir"),
                                  std::string("/proc/grassaudit-test.json"), std::string("/dev/full")}) {
    SCOPED_TRACE(path);
    std::string what = expect_input_error([&] { write_file_atomic(path, std::string(100000, 'x')); });
    EXPECT_NE(what.find(path), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
  // A writer that fails half way: the temporary is removed, the old file is untouched.
  write_text(t.file("keep.json"), "old");
  EXPECT_THROW(write_file_atomic_with(t.file("keep.json"),
                                      [](const std::string& tmp) {
                                        write_text(tmp, "half");
                                        throw InputError("disk on fire");
                                      }),
               InputError);
  EXPECT_EQ(read_text(t.file("keep.json")), "old");
  EXPECT_EQ(list_files(t.path()), (std::set<std::string>{"adir/", "afile", "keep.json"}));
  // Devices are written in place.
  EXPECT_NO_THROW(write_file_atomic("/dev/null", "discarded"));
}

TEST_F(AtomicWrite, CheckpointToFullDiskIsReported) {
  std::string what = expect_input_error([] { write_tiny_checkpoint("/dev/full", {}); });
  EXPECT_NE(what.find("/dev/full"), std::string::npos) << what;
  TempDir t;
  what = expect_input_error([&] { write_tiny_checkpoint(t.file("nodir/a.ckpt"), {}); });
  EXPECT_NE(what.find("nodir/a.ckpt"), std::string::npos) << what;
  EXPECT_TRUE(list_files(t.path()).empty());
}

using CliOutput = DevicesIntact;

std::vector<std::string> quick_audit(const std::string& flag, const std::string& path) {
  return {"audit", "--model", fixture("ok_causal.pt"), "--input", "features:4", "--seq-len", "8", "--trials", "1",
          "--threads", "1", flag, path};
}

TEST_F(CliOutput, AuditJsonAndLeakMapUnwritable) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  TempDir t;
  Cli cli(t);
  write_text(t.file("afile"), "x");
  fs::create_directories(t.file("adir"));
  const std::vector<std::pair<std::string, std::string>> cases{
      {"/nonexistent-dir/x.json", "No such file"},
      {t.file("afile/x.json"), "Not a directory"},
      {"/proc/grassaudit-x.json", ""},
      {t.file("adir"), "is a directory"},
      {"/dev/full", "No space left"},
  };
  for (const char* flag : {"--json", "--leak-map"}) {
    for (const auto& [path, problem] : cases) {
      SCOPED_TRACE(std::string(flag) + " " + path);
      auto r = cli.run(quick_audit(flag, path));
      std::vector<std::string> needles{"cannot write " + path};
      if (!problem.empty()) needles.push_back(problem);
      EXPECT_TRUE(IsOneLineError(r, "audit", needles));
    }
  }
  EXPECT_EQ(list_files(t.path()), (std::set<std::string>{"adir/", "afile"}));
  EXPECT_FALSE(fs::exists("/nonexistent-dir"));
  // Writing through a link to the process's own stdout (as /dev/stdout is, here a private link
  // so that a regression cannot replace the system's): the JSON reaches stdout, whose file
  // descriptor is a regular file here, and the link stays a link.
  ASSERT_EQ(::symlink("/proc/self/fd/1", t.file("stdout-link").c_str()), 0);
  auto r = cli.run(quick_audit("--json", t.file("stdout-link")));
  EXPECT_EQ(r.status, 0) << show(r);
  EXPECT_NE(r.out.find("\"verdict\""), std::string::npos) << r.out;
  EXPECT_TRUE(is_symlink(t.file("stdout-link")));
  r = cli.run(quick_audit("--json", "/dev/null"));
  EXPECT_EQ(r.status, 0) << show(r);
  EXPECT_TRUE(is_char_device("/dev/null"));
}

TEST_F(CliOutput, TrainOutUnwritable) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  TempDir t;
  Cli cli(t);
  make_fake_data(t.file("data"));
  write_text(t.file("afile"), "x");
  write_text(t.file("ckfile/checkpoints"), "x");  // "checkpoints" is a file
  for (const std::string& out : {t.file("afile/run"), std::string("/proc/grassaudit-run"), t.file("ckfile"),
                                 std::string("/dev/full")}) {
    SCOPED_TRACE(out);
    auto r = cli.run({"train", "--mixer", "past", "--preset", "tiny", "--data-dir", t.file("data"), "--tokenizer",
                      "word", "--allow-other-data", "--max-tokens", "64", "--out", out, "--threads", "1"});
    EXPECT_TRUE(IsOneLineError(r, "train", {"cannot create directory"}, false));
  }
  EXPECT_EQ(list_files(t.file("ckfile")), std::set<std::string>{"checkpoints"});
}

TEST_F(CliOutput, BenchEvalReportJsonUnwritable) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  TempDir t;
  Cli cli(t);
  write_text(t.file("afile"), "x");
  // (bench creates a missing parent folder, so a file in the way is the unwritable case.)
  for (const auto& [path, needle] : std::vector<std::pair<std::string, std::string>>{
           {"/dev/full", "cannot write /dev/full"}, {t.file("afile/b.json"), "afile"}}) {
    SCOPED_TRACE(path);
    auto r = cli.run({"bench", "--mixer", "past", "--batch", "1", "--seq-len", "8", "--d-model", "8", "--rank", "2",
                      "--offsets", "1", "--reps", "1", "--warmup", "0", "--threads", "1", "--json", path});
    EXPECT_TRUE(IsOneLineError(r, "bench", {needle}, false));
  }
  // eval: a real tiny run on fake data, then --json to a full disk.
  make_fake_data(t.file("data"));
  auto r = cli.run({"train", "--mixer", "past", "--preset", "tiny", "--data-dir", t.file("data"), "--tokenizer",
                    "word", "--allow-other-data", "--max-tokens", "64", "--out", t.file("run"), "--threads", "1"});
  ASSERT_EQ(r.status, 0) << show(r);
  for (const std::string& path : {std::string("/dev/full"), t.file("afile/e.json")}) {
    SCOPED_TRACE(path);
    r = cli.run({"eval", "--checkpoint", t.file("run/checkpoints/last.ckpt"), "--split", "valid", "--data-dir",
                 t.file("data"), "--allow-other-data", "--threads", "1", "--json", path});
    EXPECT_TRUE(IsOneLineError(r, "eval", {"cannot write " + path}, false));
  }
  // report: the output folder cannot be created.
  const std::string src = GRASSAUDIT_SOURCE_DIR;
  r = cli.run({"report", "--runs", src + "/reports/runs", "--reference", src + "/reference", "--bench",
               src + "/reports/bench", "--out", t.file("afile/report")});
  EXPECT_TRUE(IsOneLineError(r, "report", {"afile/report"}, false));
  EXPECT_TRUE(NoTempFiles(t.path()));
}

}  // namespace
}  // namespace grassaudit::clitest
