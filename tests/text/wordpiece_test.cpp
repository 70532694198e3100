#include "text/wordpiece.h"

#include <gtest/gtest.h>

#include "test_support.h"
#include "text/basic_tokenizer.h"
#include "text/wikitext_wordpiece.h"
#include "util/error.h"

namespace grassaudit {
namespace {

using Strings = std::vector<std::string>;

Strings basic(std::string_view text) {
  Strings out;
  bert_basic_tokenize(text, out);
  return out;
}

// The real bert-base-uncased tokenizer, loaded once per process.
const WordPieceTokenizer* real_tokenizer() {
  static const std::string path = testing::real_data_file("bert-base-uncased/vocab.txt");
  if (path.empty()) return nullptr;
  static const WordPieceTokenizer tok(Vocab::load_bert(path));
  return &tok;
}

#define REQUIRE_REAL_TOKENIZER(var)                              \
  const WordPieceTokenizer* var = real_tokenizer();              \
  if (!var) GTEST_SKIP() << "shared data absent: bert-base-uncased/vocab.txt"

TEST(BasicTokenizer, PunctuationAndCase) {
  EXPECT_EQ(basic("Hello, World!"), (Strings{"hello", ",", "world", "!"}));
  EXPECT_EQ(basic("  a\tb\n"), (Strings{"a", "b"}));
  EXPECT_EQ(basic("$5.00 ^_^"), (Strings{"$", "5", ".", "00", "^", "_", "^"}));
  EXPECT_EQ(basic("@-@ <unk>"), (Strings{"@", "-", "@", "<", "unk", ">"}));
}

TEST(BasicTokenizer, AccentsAreStrippedAfterNfd) {
  EXPECT_EQ(basic("Caf\xc3\xa9 na\xc3\xafve"), (Strings{"cafe", "naive"}));    // é, ï
  EXPECT_EQ(basic("\xc3\x89" "COLE"), (Strings{"ecole"}));                        // É upper
  EXPECT_EQ(basic("Senj\xc5\x8d"), (Strings{"senjo"}));                         // ō
  EXPECT_EQ(basic("e\xcc\x81"), (Strings{"e"}));                               // e + U+0301
}

TEST(BasicTokenizer, CjkIdeographsAreIsolated) {
  // 戦場のヴァルキュリア: the two kanji are CJK ideographs; kana are not split apart, but
  // NFD decomposes ヴ into ウ + U+3099 (Mn), which is then stripped.
  EXPECT_EQ(basic("\xe6\x88\xa6\xe5\xa0\xb4\xe3\x81\xae\xe3\x83\xb4\xe3\x82\xa1"),
            (Strings{"\xe6\x88\xa6", "\xe5\xa0\xb4", "\xe3\x81\xae\xe3\x82\xa6\xe3\x82\xa1"}));
  EXPECT_EQ(basic("ab\xe4\xb8\xad" "cd"), (Strings{"ab", "\xe4\xb8\xad", "cd"}));
}

TEST(BasicTokenizer, ControlCharactersDroppedWhitespaceNormalised) {
  // U+0000, U+FFFD and a zero-width space (Cf) vanish; NBSP and ideographic space separate.
  EXPECT_EQ(basic(std::string("a\0b", 3)), (Strings{"ab"}));
  EXPECT_EQ(basic("a\xef\xbf\xbd" "b\xe2\x80\x8b" "c"), (Strings{"abc"}));
  EXPECT_EQ(basic("a\xc2\xa0" "b\xe3\x80\x80" "c"), (Strings{"a", "b", "c"}));
}

TEST(WordPiece, HandCheckedExamplesWithRealVocab) {
  REQUIRE_REAL_TOKENIZER(tok);
  EXPECT_EQ(tok->tokenize("Hello, World!"), (Strings{"hello", ",", "world", "!"}));
  EXPECT_EQ(tok->tokenize("unaffable"), (Strings{"una", "##ffa", "##ble"}));
  EXPECT_EQ(tok->tokenize("Caf\xc3\xa9"), (Strings{"cafe"}));
  EXPECT_EQ(tok->tokenize("\xe4\xb8\xad"), (Strings{"\xe4\xb8\xad"}));  // 中 is in the vocab
  EXPECT_EQ(tok->tokenize("playing"), (Strings{"playing"}));
  EXPECT_EQ(tok->tokenize("tokenization"), (Strings{"token", "##ization"}));
  EXPECT_EQ(tok->encode("[SEP]"), (std::vector<int32_t>{1031, 19802, 1033}));  // "[", "sep", "]"
}

TEST(WordPiece, OverlongWordIsUnk) {
  REQUIRE_REAL_TOKENIZER(tok);
  EXPECT_EQ(tok->tokenize(std::string(100, 'a')).front(), "aaa");  // 100 chars: still split
  EXPECT_EQ(tok->tokenize(std::string(101, 'a')), (Strings{"[UNK]"}));
  EXPECT_EQ(tok->encode(std::string(101, 'a') + " ok"),
            (std::vector<int32_t>{100, tok->vocab().at("ok")}));
}

TEST(WordPiece, UncoverableWordIsOneUnk) {
  testing::TempDir t;
  // "ab" is coverable ("a", "##b"); "ac" is not ("##c" missing), so the whole word is [UNK].
  Vocab v = Vocab::load_bert(t.write("vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\na\n##b\n##a\n"));
  WordPieceTokenizer tok(v);
  EXPECT_EQ(tok.tokenize("ab ac abab"), (Strings{"a", "##b", "[UNK]", "a", "##b", "##a", "##b"}));
}

TEST(WordPiece, InvalidUtf8NamesLine) {
  testing::TempDir t;
  WordPieceTokenizer tok(Vocab::load_bert(t.write("vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n")));
  std::vector<int32_t> out;
  EXPECT_INPUT_ERROR(tok.encode("fine\nalso fine\nbad \xc3\x28\n", out, "notes.txt"),
                     "notes.txt: line 3: invalid UTF-8");
}

TEST(WikitextWordPiece, SepPerLineAndUnkMarker) {
  REQUIRE_REAL_TOKENIZER(tok);
  std::vector<int32_t> out;
  encode_wikitext_wordpiece(" \n = Valkyria <unk> = \n", "wiki.x.tokens", *tok, out);
  const Vocab& v = tok->vocab();
  std::vector<int32_t> want{102, v.at("="), v.at("val"), v.at("##ky"), v.at("##ria"), 100,
                            v.at("="), 102};
  EXPECT_EQ(out, want);
}

TEST(WikitextWordPiece, InvalidUtf8NamesFileAndLine) {
  REQUIRE_REAL_TOKENIZER(tok);
  std::vector<int32_t> out;
  EXPECT_INPUT_ERROR(encode_wikitext_wordpiece("a\nb\n\xff\n", "wiki.test.tokens", *tok, out),
                     "wiki.test.tokens: line 3: invalid UTF-8");
}

}  // namespace
}  // namespace grassaudit
