#include "text/vocab.h"

#include <gtest/gtest.h>

#include "test_support.h"
#include "util/error.h"

namespace grassaudit {
namespace {

using testing::TempDir;

const char* kMiniVocab = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nhello\n##s\n";

TEST(Vocab, RealBertVocab) {
  GRASSAUDIT_REQUIRE_DATA(path, "bert-base-uncased/vocab.txt");
  Vocab v = Vocab::load_bert(path);
  EXPECT_EQ(v.size(), 30522);
  EXPECT_EQ(v.find("[PAD]"), 0);
  EXPECT_EQ(v.find("[UNK]"), 100);
  EXPECT_EQ(v.find("[CLS]"), 101);
  EXPECT_EQ(v.find("[SEP]"), 102);
  EXPECT_EQ(v.find("[MASK]"), 103);
  EXPECT_EQ(v.token(102), "[SEP]");
  EXPECT_EQ(v.find("not-a-token-xyz"), Vocab::kNoId);
}

TEST(Vocab, LookupBothWaysAndCopiesShareTable) {
  TempDir t;
  Vocab v = Vocab::load_bert(t.write("vocab.txt", kMiniVocab));
  Vocab copy = v;
  v = Vocab();  // the copy must stay valid on its own
  EXPECT_EQ(copy.size(), 7);
  EXPECT_EQ(copy.find("hello"), 5);
  EXPECT_EQ(copy.at("##s"), 6);
  EXPECT_EQ(copy.token(5), "hello");
  EXPECT_THROW(copy.token(7), std::out_of_range);
  EXPECT_THROW(copy.token(-1), std::out_of_range);
  EXPECT_THROW(copy.at("nope"), std::out_of_range);
  EXPECT_EQ(v.size(), 0);
}

TEST(Vocab, LastLineWithoutNewlineAndCrlf) {
  TempDir t;
  Vocab v = Vocab::load_bert(t.write("vocab.txt", "[PAD]\r\n[UNK]\r\n[CLS]\n[SEP]\n[MASK]"));
  EXPECT_EQ(v.size(), 5);
  EXPECT_EQ(v.find("[MASK]"), 4);
  EXPECT_EQ(v.find("[PAD]"), 0);
}

TEST(VocabErrors, MissingFile) {
  TempDir t;
  EXPECT_INPUT_ERROR(Vocab::load_bert(t.file("vocab.txt")), "vocab.txt", "No such file");
}

TEST(VocabErrors, EmptyFile) {
  TempDir t;
  EXPECT_INPUT_ERROR(Vocab::load_bert(t.write("vocab.txt", "")), "vocab.txt", "empty");
}

TEST(VocabErrors, Directory) {
  TempDir t;
  EXPECT_INPUT_ERROR(Vocab::load_bert(t.path()), "is a directory");
}

TEST(VocabErrors, DuplicateTokenNamesBothLines) {
  TempDir t;
  std::string text = std::string(kMiniVocab) + "hello\n";
  EXPECT_INPUT_ERROR(Vocab::load_bert(t.write("vocab.txt", text)), "vocab.txt",
                     "duplicate token \"hello\"", "lines 6 and 8");
}

TEST(VocabErrors, MissingSpecialToken) {
  TempDir t;
  EXPECT_INPUT_ERROR(Vocab::load_bert(t.write("vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\nx\n")),
                     "vocab.txt", "missing special token [MASK]");
}

TEST(VocabErrors, InvalidUtf8NamesLine) {
  TempDir t;
  std::string text = std::string(kMiniVocab) + "caf\xe9\n";
  EXPECT_INPUT_ERROR(Vocab::load_bert(t.write("vocab.txt", text)), "vocab.txt: line 8",
                     "invalid UTF-8");
}

TEST(VocabErrors, EmptyLine) {
  TempDir t;
  EXPECT_INPUT_ERROR(Vocab::load_bert(t.write("vocab.txt", "[PAD]\n\n[UNK]\n")),
                     "vocab.txt: line 2", "empty token");
}

}  // namespace
}  // namespace grassaudit
