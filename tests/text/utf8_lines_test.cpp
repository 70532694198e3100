#include <gtest/gtest.h>

#include "text/lines.h"
#include "text/unicode_class.h"
#include "text/utf8.h"

namespace grassaudit {
namespace {

TEST(Utf8, FindsFirstInvalidByte) {
  EXPECT_EQ(find_invalid_utf8(""), kValidUtf8);
  EXPECT_EQ(find_invalid_utf8("caf\xc3\xa9 \xe4\xb8\xad"), kValidUtf8);
  EXPECT_EQ(find_invalid_utf8("caf\xe9"), 3u);                 // Latin-1 byte
  EXPECT_EQ(find_invalid_utf8("ab\xc3"), 2u);                  // truncated sequence
  EXPECT_EQ(find_invalid_utf8("a\xc0\xaf"), 1u);               // overlong "/"
  EXPECT_EQ(find_invalid_utf8("a\xed\xa0\x80"), 1u);           // UTF-16 surrogate
  EXPECT_EQ(find_invalid_utf8("a\xf4\x90\x80\x80"), 1u);       // above U+10FFFF
}

TEST(Utf8, DecodeEncodeRoundTrip) {
  std::string s = "a\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80";
  std::string back;
  for (size_t pos = 0; pos < s.size();) append_utf8(next_code_point(s, pos), back);
  EXPECT_EQ(back, s);
}

TEST(Lines, UniversalNewlines) {
  EXPECT_TRUE(split_lines("").empty());
  EXPECT_EQ(split_lines("a\n"), (std::vector<std::string_view>{"a"}));
  EXPECT_EQ(split_lines("a"), (std::vector<std::string_view>{"a"}));
  EXPECT_EQ(split_lines("\n\n"), (std::vector<std::string_view>{"", ""}));
  EXPECT_EQ(split_lines("a\r\nb\rc\n"), (std::vector<std::string_view>{"a", "b", "c"}));
}

TEST(UnicodeClass, BertDefinitions) {
  EXPECT_TRUE(is_bert_punctuation('$'));   // ASCII symbol, BERT counts it
  EXPECT_TRUE(is_bert_punctuation('^'));
  EXPECT_TRUE(is_bert_punctuation(0x00BF));  // inverted question mark, Po
  EXPECT_TRUE(is_bert_punctuation(0x2014));  // em dash, Pd
  EXPECT_FALSE(is_bert_punctuation('a'));
  EXPECT_FALSE(is_bert_punctuation(0x00A9));  // copyright sign is So, not P
  EXPECT_TRUE(is_cjk_ideograph(0x4E2D));
  EXPECT_FALSE(is_cjk_ideograph(0x3042));     // hiragana
  EXPECT_TRUE(is_bert_control(0x200B));  // zero-width space is Cf: BERT drops it
  EXPECT_TRUE(is_bert_control(0x0001));
  EXPECT_FALSE(is_bert_control('\t'));
  EXPECT_TRUE(is_bert_whitespace(0x3000));    // ideographic space, Zs
  EXPECT_TRUE(is_python_space(0x2028));       // line separator: str.split() splits on it
  EXPECT_TRUE(is_python_space(0x1C));
  EXPECT_FALSE(is_python_space(0x200B));
  EXPECT_TRUE(is_nonspacing_mark(0x0301));
}

}  // namespace
}  // namespace grassaudit
