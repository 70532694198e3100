#pragma once
// The classic WikiText-2 word-level tokenizer of pytorch/examples word_language_model:
// every line (empty ones included) is split on whitespace (Python's str.split()) and gets
// one "<eos>" appended; ids are assigned in first-seen order across the texts, in the order
// given (train, valid, test), so ids are deterministic.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "text/vocab.h"

namespace grassaudit {

// A text to tokenize and the name used in error messages (e.g. "wiki.train.tokens").
struct NamedText {
  std::string name;
  std::string_view text;
};

struct WordCorpus {
  Vocab vocab;                              // first-seen order; "<eos>" included
  std::vector<std::vector<int32_t>> ids;    // one per input text, same order
  std::vector<int64_t> lines;               // lines per input text
};

// Appends the whitespace-separated words of `line` (Python str.split() semantics; `line`
// must be valid UTF-8) to `out` as views into `line`.
void split_words(std::string_view line, std::vector<std::string_view>& out);

// Tokenizes all texts with one shared vocabulary. Throws InputError
// ("wiki.train.tokens: line 12: invalid UTF-8") on invalid UTF-8.
WordCorpus word_tokenize(const std::vector<NamedText>& texts);

}  // namespace grassaudit
