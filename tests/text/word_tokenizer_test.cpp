#include "text/word_tokenizer.h"

#include <gtest/gtest.h>

#include "test_support.h"
#include "util/atomic_file.h"
#include "util/error.h"

namespace grassaudit {
namespace {

TEST(SplitWords, PythonStrSplitSemantics) {
  std::vector<std::string_view> w;
  split_words("  a  b\tc \xe2\x80\x83 d\xc2\xa0" "e ", w);  // em space U+2003, NBSP U+00A0
  EXPECT_EQ(w, (std::vector<std::string_view>{"a", "b", "c", "d", "e"}));
  w.clear();
  split_words("", w);
  EXPECT_TRUE(w.empty());
}

TEST(WordTokenize, EosPerLineFirstSeenIds) {
  WordCorpus c = word_tokenize({{"a", "the cat\n\nthe dog\n"}, {"b", "cat bird"}});
  // Every line, the empty one included, ends with <eos>; the last line needs no "\n".
  ASSERT_EQ(c.vocab.tokens(),
            (std::vector<std::string>{"the", "cat", "<eos>", "dog", "bird"}));
  EXPECT_EQ(c.ids[0], (std::vector<int32_t>{0, 1, 2, 2, 0, 3, 2}));
  EXPECT_EQ(c.ids[1], (std::vector<int32_t>{1, 4, 2}));
  EXPECT_EQ(c.lines, (std::vector<int64_t>{3, 1}));
}

TEST(WordTokenize, InvalidUtf8NamesFileAndLine) {
  EXPECT_INPUT_ERROR(word_tokenize({{"wiki.train.tokens", "ok\nfine\nbad \xff here\n"}}),
                     "wiki.train.tokens: line 3: invalid UTF-8");
}

TEST(WordTokenize, RealWikitext2MatchesPublishedCounts) {
  GRASSAUDIT_REQUIRE_DATA(train, "wikitext-2/wiki.train.tokens");
  GRASSAUDIT_REQUIRE_DATA(valid, "wikitext-2/wiki.valid.tokens");
  GRASSAUDIT_REQUIRE_DATA(test, "wikitext-2/wiki.test.tokens");
  const std::string a = read_file(train), b = read_file(valid), c = read_file(test);
  WordCorpus wc = word_tokenize({{"train", a}, {"valid", b}, {"test", c}});
  EXPECT_EQ(wc.ids[0].size(), 2088628u);
  EXPECT_EQ(wc.ids[1].size(), 217646u);
  EXPECT_EQ(wc.ids[2].size(), 245569u);
  EXPECT_EQ(wc.lines[0], 36718);
  EXPECT_EQ(wc.vocab.size(), 33278);
  // The first line of wiki.train.tokens is empty, so the stream starts with <eos>.
  EXPECT_EQ(wc.vocab.token(wc.ids[0][0]), "<eos>");
  EXPECT_EQ(wc.vocab.token(wc.ids[0][1]), "=");
}

}  // namespace
}  // namespace grassaudit
