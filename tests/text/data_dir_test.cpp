#include "text/data_dir.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include "test_support.h"
#include "util/error.h"

namespace grassaudit {
namespace {

using testing::TempDir;

// Sets or unsets $GRASSAUDIT_DATA for one test, restoring it afterwards.
class ScopedDataEnv {
 public:
  explicit ScopedDataEnv(const char* value) {
    const char* old = ::getenv("GRASSAUDIT_DATA");
    had_ = old != nullptr;
    if (had_) old_ = old;
    if (value) ::setenv("GRASSAUDIT_DATA", value, 1); else ::unsetenv("GRASSAUDIT_DATA");
  }
  ~ScopedDataEnv() {
    if (had_) ::setenv("GRASSAUDIT_DATA", old_.c_str(), 1); else ::unsetenv("GRASSAUDIT_DATA");
  }

 private:
  bool had_ = false;
  std::string old_;
};

TEST(DataDirCandidates, FlagWinsThenEnvThenDefaults) {
  EXPECT_EQ(data_dir_candidates("/f", "/e", "/src"), std::vector<std::string>{"/f"});
  EXPECT_EQ(data_dir_candidates("", "/e", "/src"), std::vector<std::string>{"/e"});
  EXPECT_EQ(data_dir_candidates("", "", "/src"),
            (std::vector<std::string>{"../shared/data", "/src/../shared/data"}));
  EXPECT_EQ(data_dir_candidates("", "", ""), std::vector<std::string>{"../shared/data"});
}

TEST(ResolveDataDir, FlagIsUsedEvenIfMissing) {
  EXPECT_EQ(resolve_data_dir("/no/such/dir"), "/no/such/dir");
}

TEST(ResolveDataDir, EnvironmentVariable) {
  TempDir t;
  ScopedDataEnv env(t.path().c_str());
  EXPECT_EQ(resolve_data_dir(""), t.path());
  EXPECT_EQ(resolve_data_dir("/explicit"), "/explicit");
}

TEST(RequireDataFile, ReturnsExistingFile) {
  TempDir t;
  t.write("wikitext-2/wiki.train.tokens", "x\n");
  EXPECT_EQ(require_data_file(t.path(), "wikitext-2/wiki.train.tokens"),
            t.path() + "/wikitext-2/wiki.train.tokens");
}

TEST(RequireDataFile, MissingNamesFileAndPlaceLooked) {
  TempDir t;
  EXPECT_INPUT_ERROR(require_data_file(t.path(), "snli/snli_1.0_dev.jsonl.gz"),
                     "snli/snli_1.0_dev.jsonl.gz", t.path().c_str(), "No such file",
                     "--data-dir");
}

TEST(RequireDataFile, DirectoryInsteadOfFile) {
  TempDir t;
  t.write("wikitext-2/wiki.train.tokens/inner", "x");
  EXPECT_INPUT_ERROR(require_data_file(t.path(), "wikitext-2/wiki.train.tokens"),
                     "is a directory");
}

TEST(RequireDataFile, DefaultsListEveryPlaceLooked) {
  ScopedDataEnv env(nullptr);
  EXPECT_INPUT_ERROR(require_data_file("", "no-such-folder/x.txt"),
                     "../shared/data/no-such-folder/x.txt", "GRASSAUDIT_DATA");
}

TEST(RequireDataFile, FindsRealDataWithoutFlagWhenInstalled) {
  GRASSAUDIT_REQUIRE_DATA(vocab, "bert-base-uncased/vocab.txt");
  ScopedDataEnv env(testing::real_data_dir().c_str());
  EXPECT_TRUE(testing::path_exists(require_data_file("", "bert-base-uncased/vocab.txt")));
}

}  // namespace
}  // namespace grassaudit
