// WordPiece + BERT basic tokenizer on arbitrary bytes. Valid UTF-8 must tokenize without error
// into non-empty, whitespace-free tokens that are all in the vocabulary; invalid UTF-8 must be an
// InputError naming the line.
#include <string>
#include <string_view>
#include <vector>

#include "text/basic_tokenizer.h"
#include "text/utf8.h"
#include "text/vocab.h"
#include "text/wordpiece.h"
#include "util/error.h"

namespace {
const grassaudit::WordPieceTokenizer& tokenizer() {
  static const grassaudit::WordPieceTokenizer t(
      grassaudit::Vocab::from_tokens({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "un", "##aff", "##able",
                                      "a", "##b", "##c", "e", "##é", "中", ",", ".", "##s", "##ing", "play", "x"},
                                     "fuzz vocab"),
      /*max_chars_per_word=*/8);
  return t;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const bool valid = grassaudit::find_invalid_utf8(text) == grassaudit::kValidUtf8;
  if (valid) {
    std::vector<std::string> basic;
    grassaudit::bert_basic_tokenize(text, basic);
    for (const auto& t : basic) {
      if (t.empty()) __builtin_trap();
      for (char c : t)
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r') __builtin_trap();
      if (grassaudit::find_invalid_utf8(t) != grassaudit::kValidUtf8) __builtin_trap();
    }
  }
  std::vector<int32_t> ids;
  try {
    tokenizer().encode(text, ids, "fuzz");
    if (!valid) __builtin_trap();  // invalid UTF-8 accepted
    for (int32_t id : ids)
      if (id < 0 || id >= tokenizer().vocab().size()) __builtin_trap();
  } catch (const grassaudit::InputError&) {
    if (valid) __builtin_trap();  // valid text refused
  }
  return 0;
}
