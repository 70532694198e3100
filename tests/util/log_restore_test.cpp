// A resumed run's metrics log is restored to exactly the extent its checkpoint recorded: later
// records and a torn last line are cut (and said so); records the checkpoint counted that are
// lost or damaged are errors naming the file (and line), and nothing is cut then.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <string>

#include "support/test_support_common.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/jsonl_log.h"

namespace grassaudit {
namespace {

struct LogTempDir : ::grassaudit::testing::PrefixedTempDir {
  LogTempDir() : PrefixedTempDir("grassaudit-log") {}
};

void put(const std::string& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

std::string error_of(const std::function<void()>& f) { return ::grassaudit::testing::thrown_message<InputError>(f); }

TEST(LogExtent, CountsRecordsAndBytesAcrossReopening) {
  LogTempDir t;
  const std::string p = t.path() + "/m.jsonl";
  {
    JsonlLog log(p);
    log.write("{\"a\":1}");
    log.write("{\"b\":22}");
    EXPECT_EQ(log.extent().records, 2);
    EXPECT_EQ(log.extent().bytes, 17);
    log.sync();
  }
  JsonlLog again(p);
  EXPECT_EQ(again.extent().records, 2);
  EXPECT_EQ(again.extent().bytes, 17);
  JsonlLog emptied(p, /*append=*/false);
  EXPECT_EQ(emptied.extent().records, 0);
}

TEST(LogExtent, RestoreCutsLaterRecordsAndATornLine) {
  LogTempDir t;
  const std::string p = t.path() + "/m.jsonl";
  put(p, "{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n{\"d\":");
  const std::string note = restore_log(p, LogExtent{2, 16}, "last.ckpt");
  EXPECT_EQ(read_file(p), "{\"a\":1}\n{\"b\":2}\n");
  EXPECT_NE(note.find("cut 1 record(s)"), std::string::npos) << note;
  EXPECT_NE(note.find("torn last line"), std::string::npos) << note;
  EXPECT_EQ(restore_log(p, LogExtent{2, 16}, "last.ckpt"), "") << "nothing more to cut";
}

TEST(LogExtent, LostOrDamagedCountedRecordsAreErrorsAndNothingIsCut) {
  LogTempDir t;
  const std::string p = t.path() + "/m.jsonl";
  put(p, "{\"a\":1}\n");
  EXPECT_NE(error_of([&] { restore_log(p, LogExtent{2, 16}, "last.ckpt"); }).find("are lost"), std::string::npos);
  put(p, "{\"a\":1}\n{\"b\":2\n{\"c\":3}\n");
  const std::string damaged = error_of([&] { restore_log(p, LogExtent{2, 15}, "last.ckpt"); });
  EXPECT_NE(damaged.find(p + ":2: damaged record"), std::string::npos) << damaged;
  EXPECT_EQ(read_file(p), "{\"a\":1}\n{\"b\":2\n{\"c\":3}\n");
  put(p, "{\"a\":1}\n{\"b\":2}\n");
  EXPECT_NE(error_of([&] { restore_log(p, LogExtent{3, 16}, "last.ckpt"); }).find("counted 3"), std::string::npos);
  // A checkpoint resumed into another folder: no log there yet, a new one starts (said so).
  EXPECT_NE(restore_log(t.path() + "/gone.jsonl", LogExtent{1, 8}, "last.ckpt").find("a new log starts"),
            std::string::npos);
  EXPECT_EQ(restore_log(t.path() + "/gone.jsonl", LogExtent{0, 0}, "last.ckpt"), "");
}

TEST(LogExtent, OldRuleKeepsStepsUpToTheCheckpointAndNamesDamage) {
  LogTempDir t;
  const std::string p = t.path() + "/m.jsonl";
  put(p, "{\"step\":1}\n{\"step\":2,\"split\":\"test\"}\n{\"step\":3}\n{\"st");
  const std::string note = truncate_metrics_after(p, 2);
  EXPECT_EQ(read_file(p), "{\"step\":1}\n");
  EXPECT_NE(note.find("torn last line"), std::string::npos) << note;
  put(p, "{\"step\":1}\nnot json\n{\"step\":2}\n");
  const std::string e = error_of([&] { truncate_metrics_after(p, 5); });
  EXPECT_NE(e.find(p + ":2: damaged record"), std::string::npos) << e;
  EXPECT_EQ(read_file(p), "{\"step\":1}\nnot json\n{\"step\":2}\n");
}

}  // namespace
}  // namespace grassaudit
