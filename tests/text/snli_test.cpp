#include "text/snli.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include "test_support.h"
#include "util/atomic_file.h"
#include "util/error.h"

namespace grassaudit {
namespace {

using testing::TempDir;

std::string record(const std::string& label, const std::string& s1 = "A man.",
                   const std::string& s2 = "A person.") {
  return "{\"gold_label\": \"" + label + "\", \"sentence1\": \"" + s1 +
         "\", \"sentence2\": \"" + s2 + "\", \"pairID\": \"x\"}\n";
}

// gzip-compresses `text` into <dir>/<name>.
std::string write_gz(const TempDir& t, const std::string& name, const std::string& text) {
  const std::string path = t.file(name);
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
  gzclose(f);
  return path;
}

TEST(Snli, RealDevCounts) {
  GRASSAUDIT_REQUIRE_DATA(path, "snli/snli_1.0_dev.jsonl.gz");
  SnliData d = read_snli(path);
  EXPECT_EQ(d.lines, 10000);
  EXPECT_EQ(d.skipped_no_label, 158);
  EXPECT_EQ(d.label_counts[kEntailment], 3329);
  EXPECT_EQ(d.label_counts[kNeutral], 3235);
  EXPECT_EQ(d.label_counts[kContradiction], 3278);
  EXPECT_EQ(d.pairs.size(), 9842u);
  EXPECT_EQ(d.pairs[0].sentence1, "Two women are embracing while holding to go packages.");
  EXPECT_EQ(d.pairs[0].label, kNeutral);
}

TEST(Snli, RealTestCounts) {
  GRASSAUDIT_REQUIRE_DATA(path, "snli/snli_1.0_test.jsonl.gz");
  SnliData d = read_snli(path);
  EXPECT_EQ(d.lines, 10000);
  EXPECT_EQ(d.skipped_no_label, 176);
  EXPECT_EQ(d.label_counts[kEntailment], 3368);
  EXPECT_EQ(d.label_counts[kNeutral], 3219);
  EXPECT_EQ(d.label_counts[kContradiction], 3237);
}

TEST(Snli, RealTrainFirst1024) {
  GRASSAUDIT_REQUIRE_DATA(path, "snli/snli_1.0_train_first1024.jsonl.gz");
  SnliData d = read_snli(path);
  EXPECT_EQ(d.lines, 1024);
  EXPECT_EQ(d.skipped_no_label + static_cast<int64_t>(d.pairs.size()), 1024);
}

TEST(Snli, PlainAndGzipReadTheSame) {
  TempDir t;
  const std::string text = record("entailment") + record("-") + record("contradiction", "x", "y") +
                           record("neutral");
  SnliData plain = read_snli(t.write("p.jsonl", text));
  SnliData gz = read_snli(write_gz(t, "g.jsonl.gz", text));
  for (const SnliData* d : {&plain, &gz}) {
    EXPECT_EQ(d->lines, 4);
    EXPECT_EQ(d->skipped_no_label, 1);
    ASSERT_EQ(d->pairs.size(), 3u);
    EXPECT_EQ(d->pairs[1].sentence1, "x");
    EXPECT_EQ(d->pairs[1].sentence2, "y");
    EXPECT_EQ(d->pairs[1].label, kContradiction);
    EXPECT_EQ(d->label_counts, (std::array<int64_t, 3>{1, 1, 1}));
  }
}

TEST(Snli, LastLineWithoutNewlineAndCrlf) {
  TempDir t;
  std::string a = record("neutral");
  a.back() = '\r';
  a += "\n";
  std::string b = record("entailment");
  b.pop_back();
  SnliData d = read_snli(t.write("x.jsonl", a + b));
  EXPECT_EQ(d.lines, 2);
  EXPECT_EQ(d.pairs[1].label, kEntailment);
}

TEST(SnliErrors, TruncatedRealGzipIsDetected) {
  GRASSAUDIT_REQUIRE_DATA(path, "snli/snli_1.0_train_first1024.jsonl.gz");
  TempDir t;
  const std::string bytes = read_file(path);
  // Cut mid-stream, and just before the end: only part of the 8-byte CRC/size trailer lost.
  for (size_t keep : {bytes.size() / 2, bytes.size() - 8, bytes.size() - 4, bytes.size() - 1}) {
    const std::string cut = t.write("cut.jsonl.gz", bytes.substr(0, keep));
    EXPECT_INPUT_ERROR(read_snli(cut), "cut.jsonl.gz", "truncated gzip");
  }
}

TEST(SnliErrors, CorruptGzipIsDetected) {
  GRASSAUDIT_REQUIRE_DATA(path, "snli/snli_1.0_train_first1024.jsonl.gz");
  TempDir t;
  std::string bytes = read_file(path);
  for (size_t i = 100; i < 140; ++i) bytes[i] = static_cast<char>(bytes[i] ^ 0x5a);
  EXPECT_INPUT_ERROR(read_snli(t.write("bad.jsonl.gz", bytes)), "bad.jsonl.gz", "gzip");
}

TEST(SnliErrors, NotJson) {
  TempDir t;
  EXPECT_INPUT_ERROR(read_snli(t.write("x.jsonl", record("neutral") + "{oops\n")),
                     "x.jsonl: line 2: not JSON");
  EXPECT_INPUT_ERROR(read_snli(t.write("y.jsonl", "[1, 2]\n")), "y.jsonl: line 1",
                     "not a JSON object");
  EXPECT_INPUT_ERROR(read_snli(t.write("z.jsonl", record("neutral") + "\n")),
                     "z.jsonl: line 2: not JSON");
}

TEST(SnliErrors, MissingField) {
  TempDir t;
  const std::string no_s2 = "{\"gold_label\": \"neutral\", \"sentence1\": \"a\"}\n";
  EXPECT_INPUT_ERROR(read_snli(t.write("x.jsonl", record("neutral") + no_s2)),
                     "x.jsonl: line 2: missing field \"sentence2\"");
  EXPECT_INPUT_ERROR(read_snli(t.write("y.jsonl", "{\"sentence1\": \"a\", \"sentence2\": \"b\"}")),
                     "y.jsonl: line 1: missing field \"gold_label\"");
  EXPECT_INPUT_ERROR(
      read_snli(t.write("z.jsonl", "{\"gold_label\": 1, \"sentence1\": \"a\", \"sentence2\": \"b\"}")),
      "z.jsonl: line 1", "\"gold_label\" is not a string");
}

TEST(SnliErrors, UnknownLabel) {
  TempDir t;
  EXPECT_INPUT_ERROR(read_snli(t.write("x.jsonl", record("maybe"))),
                     "x.jsonl: line 1: unknown gold_label \"maybe\"");
}

TEST(SnliErrors, InvalidUtf8) {
  TempDir t;
  EXPECT_INPUT_ERROR(read_snli(t.write("x.jsonl", record("neutral", "caf\xe9"))),
                     "x.jsonl: line 1: not JSON", "UTF-8");
}

TEST(SnliErrors, MissingEmptyAndDirectory) {
  TempDir t;
  EXPECT_INPUT_ERROR(read_snli(t.file("absent.jsonl.gz")), "absent.jsonl.gz", "No such file");
  EXPECT_INPUT_ERROR(read_snli(t.write("empty.jsonl", "")), "empty.jsonl", "no records");
  EXPECT_INPUT_ERROR(read_snli(write_gz(t, "empty.jsonl.gz", "")), "empty.jsonl.gz",
                     "no records");
  EXPECT_INPUT_ERROR(read_snli(t.path()), "is a directory");
}

}  // namespace
}  // namespace grassaudit
