// The WikiText word-level tokenizer (and its published-count check) on arbitrary bytes: valid
// UTF-8 gives one "<eos>" per line and ids within the vocabulary; invalid UTF-8 is an InputError.
#include <string>
#include <string_view>
#include <vector>

#include "text/lines.h"
#include "text/utf8.h"
#include "text/wikitext_counts.h"
#include "text/word_tokenizer.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const bool valid = grassaudit::find_invalid_utf8(text) == grassaudit::kValidUtf8;
  try {
    grassaudit::WordCorpus c = grassaudit::word_tokenize({{"fuzz.tokens", text}, {"second.tokens", text}});
    if (!valid) __builtin_trap();
    if (c.ids.size() != 2 || c.lines.size() != 2 || c.ids[0] != c.ids[1]) __builtin_trap();
    // One id per word plus one "<eos>" per line (the text may itself contain the word "<eos>").
    const auto lines = grassaudit::split_lines(text);
    if (c.lines[0] != static_cast<int64_t>(lines.size())) __builtin_trap();
    size_t expected = 0;
    std::vector<std::string_view> words;
    for (const auto& line : lines) {
      words.clear();
      grassaudit::split_words(line, words);
      expected += words.size() + 1;
    }
    if (c.ids[0].size() != expected) __builtin_trap();
    const int32_t eos = c.vocab.find("<eos>");
    for (int32_t id : c.ids[0])
      if (id < 0 || id >= c.vocab.size()) __builtin_trap();
    if (!lines.empty() && (eos == grassaudit::Vocab::kNoId || c.ids[0].back() != eos)) __builtin_trap();
    grassaudit::WordCounts w = grassaudit::count_words(text, "fuzz.tokens");
    if (w.lines != c.lines[0] || w.tokens != static_cast<int64_t>(c.ids[0].size())) __builtin_trap();
  } catch (const grassaudit::InputError&) {
    if (valid) __builtin_trap();
  }
  return 0;
}
