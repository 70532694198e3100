#include "text/wikitext2.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "test_support.h"
#include "text/token_cache.h"
#include "text/wikitext_counts.h"
#include "util/atomic_file.h"
#include "util/error.h"

namespace grassaudit {
namespace {

using testing::TempDir;

// A tiny WikiText-shaped data folder: 2 lines per split, with a mini BERT vocab.
void write_fake_data(const TempDir& t) {
  t.write("data/wikitext-2/wiki.train.tokens", " \n = The <unk> cat = \n");
  t.write("data/wikitext-2/wiki.valid.tokens", "the cat\n");
  t.write("data/wikitext-2/wiki.test.tokens", "cat , the\n");
  t.write("data/bert-base-uncased/vocab.txt",
          "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\ncat\n=\n,\n");
}

TEST(Wikitext2Fake, WrongCountsAreRejectedWithHint) {
  TempDir t;
  write_fake_data(t);
  EXPECT_INPUT_ERROR(load_wikitext2(t.file("data"), "word", false, ""),
                     "wiki.train.tokens: expected 2,088,628 tokens, found 7",
                     "pass --allow-other-data to use it anyway");
}

TEST(Wikitext2Fake, WrongLineCountIsRejected) {
  WordCounts expected{3760, 217646};
  EXPECT_INPUT_ERROR(check_counts("wiki.valid.tokens", expected, {3761, 217646}),
                     "wiki.valid.tokens: expected 3,760 lines, found 3,761");
  EXPECT_INPUT_ERROR(check_counts("wiki.valid.tokens", expected, {3760, 5}),
                     "wiki.valid.tokens: expected 217,646 tokens, found 5; pass --allow-other-data");
  EXPECT_NO_THROW(check_counts("wiki.valid.tokens", expected, expected));
}

TEST(Wikitext2Fake, WordLevelWithAllowOtherData) {
  TempDir t;
  write_fake_data(t);
  TokenizedCorpus c = load_wikitext2(t.file("data"), "word", true, "");
  EXPECT_EQ(c.tokenizer, "word");
  EXPECT_EQ(c.vocab.tokens(),
            (std::vector<std::string>{"<eos>", "=", "The", "<unk>", "cat", "the", ","}));
  EXPECT_EQ(c.train, (std::vector<int32_t>{0, 1, 2, 3, 4, 1, 0}));
  EXPECT_EQ(c.valid, (std::vector<int32_t>{5, 4, 0}));
  EXPECT_EQ(c.test, (std::vector<int32_t>{4, 6, 5, 0}));
  EXPECT_EQ(c.vocab_size(), 7);
  EXPECT_FALSE(c.from_cache);
}

TEST(Wikitext2Fake, WordPieceSepPerLineAndUnk) {
  TempDir t;
  write_fake_data(t);
  TokenizedCorpus c = load_wikitext2(t.file("data"), "wordpiece", true, "");
  // [SEP]=3 ends every line; "<unk>" -> [UNK]=1; "The" lower-cased.
  EXPECT_EQ(c.train, (std::vector<int32_t>{3, 7, 5, 1, 6, 7, 3}));
  EXPECT_EQ(c.valid, (std::vector<int32_t>{5, 6, 3}));
  EXPECT_EQ(c.test, (std::vector<int32_t>{6, 8, 5, 3}));
  EXPECT_EQ(c.vocab_size(), 9);
}

TEST(Wikitext2Fake, CacheHitAndCorruptCacheIsRebuilt) {
  TempDir t;
  write_fake_data(t);
  const std::string cache = t.file("cache/nested");
  TokenizedCorpus first = load_wikitext2(t.file("data"), "word", true, cache);
  EXPECT_FALSE(first.from_cache);
  TokenizedCorpus second = load_wikitext2(t.file("data"), "word", true, cache);
  EXPECT_TRUE(second.from_cache);
  EXPECT_EQ(second.train, first.train);
  EXPECT_EQ(second.vocab.tokens(), first.vocab.tokens());

  // Truncate the single cache file: it must be rebuilt, not trusted.
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(cache)) files.push_back(e.path());
  ASSERT_EQ(files.size(), 1u);
  const std::string bytes = read_file(files[0]);
  t.write("cache/nested/" + std::filesystem::path(files[0]).filename().string(),
          bytes.substr(0, bytes.size() - 3));
  TokenizedCorpus third = load_wikitext2(t.file("data"), "word", true, cache);
  EXPECT_FALSE(third.from_cache);
  EXPECT_EQ(third.train, first.train);
  EXPECT_EQ(read_file(files[0]), bytes);  // rewritten whole

  // A different file content is a different key, so the old entry is not used.
  t.write("data/wikitext-2/wiki.valid.tokens", "the the\n");
  TokenizedCorpus fourth = load_wikitext2(t.file("data"), "word", true, cache);
  EXPECT_FALSE(fourth.from_cache);
  EXPECT_EQ(fourth.valid, (std::vector<int32_t>{5, 5, 0}));
}

TEST(Wikitext2Fake, WordAndWordPieceCachesAreSeparate) {
  TempDir t;
  write_fake_data(t);
  load_wikitext2(t.file("data"), "word", true, t.file("cache"));
  TokenizedCorpus wp = load_wikitext2(t.file("data"), "wordpiece", true, t.file("cache"));
  EXPECT_FALSE(wp.from_cache);
  EXPECT_EQ(wp.valid, (std::vector<int32_t>{5, 6, 3}));
}

TEST(Wikitext2Errors, MissingSplitNamesPlacesLooked) {
  TempDir t;
  write_fake_data(t);
  std::remove(t.file("data/wikitext-2/wiki.test.tokens").c_str());
  const std::string looked = t.file("data/wikitext-2/wiki.test.tokens (No such file");
  EXPECT_INPUT_ERROR(load_wikitext2(t.file("data"), "word", true, ""),
                     "missing data file wikitext-2/wiki.test.tokens", looked.c_str());
}

TEST(Wikitext2Errors, DirectoryInsteadOfSplit) {
  TempDir t;
  write_fake_data(t);
  std::remove(t.file("data/wikitext-2/wiki.valid.tokens").c_str());
  t.write("data/wikitext-2/wiki.valid.tokens/x", "");
  EXPECT_INPUT_ERROR(load_wikitext2(t.file("data"), "word", true, ""), "wiki.valid.tokens",
                     "is a directory");
}

TEST(Wikitext2Errors, MissingVocabForWordPieceOnly) {
  TempDir t;
  write_fake_data(t);
  std::remove(t.file("data/bert-base-uncased/vocab.txt").c_str());
  EXPECT_NO_THROW(load_wikitext2(t.file("data"), "word", true, ""));
  EXPECT_INPUT_ERROR(load_wikitext2(t.file("data"), "wordpiece", true, ""),
                     "bert-base-uncased/vocab.txt");
}

TEST(Wikitext2Errors, EmptySplitIsWrongCount) {
  TempDir t;
  write_fake_data(t);
  t.write("data/wikitext-2/wiki.train.tokens", "");
  EXPECT_INPUT_ERROR(load_wikitext2(t.file("data"), "word", false, ""),
                     "wiki.train.tokens: expected 2,088,628 tokens, found 0");
}

TEST(Wikitext2Errors, InvalidUtf8NamesLine) {
  TempDir t;
  write_fake_data(t);
  t.write("data/wikitext-2/wiki.valid.tokens", "ok\n\xc3\n");
  for (const char* tok : {"word", "wordpiece"}) {
    EXPECT_INPUT_ERROR(load_wikitext2(t.file("data"), tok, true, ""),
                       "wiki.valid.tokens: line 2: invalid UTF-8");
  }
}

TEST(Wikitext2Errors, UnknownTokenizer) {
  EXPECT_INPUT_ERROR(load_wikitext2("", "bpe", false, ""), "unknown tokenizer \"bpe\"");
}

TEST(Wikitext2Errors, OtherVocabSizeNeedsAllowOtherData) {
  GRASSAUDIT_REQUIRE_DATA(train, "wikitext-2/wiki.train.tokens");
  TempDir t;
  // The real WikiText files with a too-small vocab.txt: counts pass, the vocab check fails.
  for (const char* s : {"train", "valid", "test"}) {
    const std::string name = std::string("wiki.") + s + ".tokens";
    t.write("data/wikitext-2/" + name,
            read_file(testing::real_data_file("wikitext-2/" + name)));
  }
  t.write("data/bert-base-uncased/vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n");
  EXPECT_INPUT_ERROR(load_wikitext2(t.file("data"), "wordpiece", false, ""),
                     "vocab.txt: expected 30,522 entries, found 5", "--allow-other-data");
}

// The real data, both tokenizers; prints timing and counts for the record.
TEST(Wikitext2Real, WordLevelMatchesPublishedCounts) {
  GRASSAUDIT_REQUIRE_DATA(train, "wikitext-2/wiki.train.tokens");
  TokenizedCorpus c = load_wikitext2(testing::real_data_dir(), "word", false, "");
  EXPECT_EQ(c.train.size(), 2088628u);
  EXPECT_EQ(c.valid.size(), 217646u);
  EXPECT_EQ(c.test.size(), 245569u);
  EXPECT_EQ(c.vocab_size(), 33278);
  std::printf("[ word      ] tokenize %.2f s; train %zu valid %zu test %zu; vocab %lld\n",
              c.tokenize_seconds, c.train.size(), c.valid.size(), c.test.size(),
              static_cast<long long>(c.vocab_size()));
}

TEST(Wikitext2Real, WordPieceAndCache) {
  GRASSAUDIT_REQUIRE_DATA(train, "wikitext-2/wiki.train.tokens");
  GRASSAUDIT_REQUIRE_DATA(vocab, "bert-base-uncased/vocab.txt");
  TempDir t;
  TokenizedCorpus c = load_wikitext2(testing::real_data_dir(), "wordpiece", false, t.path());
  EXPECT_FALSE(c.from_cache);
  EXPECT_EQ(c.vocab_size(), 30522);
  const int32_t sep = c.vocab.at("[SEP]");
  // One [SEP] per line: the published line counts.
  EXPECT_EQ(std::count(c.train.begin(), c.train.end(), sep), 36718);
  EXPECT_EQ(std::count(c.valid.begin(), c.valid.end(), sep), 3760);
  EXPECT_EQ(std::count(c.test.begin(), c.test.end(), sep), 4358);
  for (const auto* split : {&c.train, &c.valid, &c.test}) {
    for (int32_t id : *split) ASSERT_TRUE(id >= 0 && id < 30522);
  }
  // Regression values, cross-checked against a Python port of HF BertTokenizer's logic.
  EXPECT_EQ(c.train.size(), 2265484u);
  EXPECT_EQ(c.valid.size(), 228778u);
  EXPECT_EQ(c.test.size(), 258011u);
  std::printf("[ wordpiece ] tokenize %.2f s; train %zu valid %zu test %zu\n",
              c.tokenize_seconds, c.train.size(), c.valid.size(), c.test.size());

  TokenizedCorpus cached = load_wikitext2(testing::real_data_dir(), "wordpiece", false, t.path());
  EXPECT_TRUE(cached.from_cache);
  EXPECT_EQ(cached.train, c.train);
  EXPECT_EQ(cached.valid, c.valid);
  EXPECT_EQ(cached.test, c.test);
}

}  // namespace
}  // namespace grassaudit
