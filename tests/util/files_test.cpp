// Output files: the JSON-lines log reports failed writes, stale temporaries of dead writers are
// removed (live ones kept), and output paths are checked before long work starts.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "support/test_support_common.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/jsonl_log.h"

namespace grassaudit {
namespace {

namespace fs = std::filesystem;

struct TempDir : ::grassaudit::testing::PrefixedTempDir {
  TempDir() : PrefixedTempDir("grassaudit-files") {}
};

void touch(const std::string& p, const std::string& text = "x") { std::ofstream(p) << text; }

using ::grassaudit::testing::dead_pid;

TEST(JsonlLog, AppendsLinesAndKeepsEarlierOnes) {
  TempDir t;
  const std::string p = t.path() + "/m.jsonl";
  touch(p, "{\"a\":1}\n");
  {
    JsonlLog log(p);
    log.write("{\"b\":2}");
  }
  std::ifstream in(p);
  std::string all((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(all, "{\"a\":1}\n{\"b\":2}\n");
  JsonlLog fresh(p, /*append=*/false);
  fresh.write("{}");
  std::ifstream in2(p);
  std::string all2((std::istreambuf_iterator<char>(in2)), {});
  EXPECT_EQ(all2, "{}\n");
}

TEST(JsonlLog, FullDiskIsAnErrorNamingTheFile) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  JsonlLog log("/dev/full");
  try {
    log.write("{\"step\":1}");
    FAIL() << "a write to /dev/full succeeded";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/dev/full"), std::string::npos) << e.what();
  }
}

TEST(JsonlLog, UnopenableFileIsAnError) {
  TempDir t;
  EXPECT_THROW(JsonlLog(t.path() + "/no/such/folder/m.jsonl"), InputError);
  EXPECT_THROW(JsonlLog(t.path()), InputError);  // a directory
}

TEST(StaleTemps, RemovesDeadWritersOnlyAndOnlyTemporaries) {
  TempDir t;
  const pid_t dead = dead_pid();
  const std::string stale = t.path() + "/last.ckpt.tmp." + std::to_string(dead);
  const std::string mine = t.path() + "/config.json.tmp." + std::to_string(::getpid());
  const std::string parent = t.path() + "/x.tmp." + std::to_string(::getppid());
  const std::string not_temp = t.path() + "/notes.tmp.txt";
  const std::string plain = t.path() + "/last.ckpt";
  for (const auto& p : {stale, mine, parent, not_temp, plain}) touch(p);
  fs::create_directory(t.path() + "/dir.tmp." + std::to_string(dead));  // not a file: left alone
  auto removed = remove_stale_temp_files(t.path());
  ASSERT_EQ(removed.size(), 1u);
  EXPECT_EQ(removed[0], stale);
  EXPECT_FALSE(fs::exists(stale));
  for (const auto& p : {mine, parent, not_temp, plain}) EXPECT_TRUE(fs::exists(p)) << p;
  EXPECT_TRUE(remove_stale_temp_files(t.path() + "/missing").empty());
}

TEST(OutputPath, CheckedBeforeWork) {
  TempDir t;
  EXPECT_NO_THROW(check_output_path(t.path() + "/new.json", "--json"));
  touch(t.path() + "/old.json");
  EXPECT_NO_THROW(check_output_path(t.path() + "/old.json", "--json"));
  EXPECT_NO_THROW(check_output_path("/dev/null", "--json"));
  auto message = [](const std::string& p) {
    try {
      check_output_path(p, "--json");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message(t.path()).find("is a directory"), std::string::npos);
  EXPECT_NE(message(t.path() + "/missing/x.json").find("No such file"), std::string::npos);
  EXPECT_NE(message(t.path() + "/old.json/x.json").find("Not a directory"), std::string::npos);
  EXPECT_NE(message("").find("needs a file name"), std::string::npos);
  EXPECT_NE(message("/proc/x.json").find("not writable"), std::string::npos);
}

}  // namespace
}  // namespace grassaudit
