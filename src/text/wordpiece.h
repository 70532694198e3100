#pragma once
// BERT WordPiece tokenization (uncased): bert_basic_tokenize, then greedy
// longest-match-first WordPiece with the "##" continuation prefix; a word longer than
// max_chars_per_word code points, or with no full cover by vocabulary pieces, becomes [UNK].
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "text/vocab.h"

namespace grassaudit {

class WordPieceTokenizer {
 public:
  // `vocab` must contain [UNK] (Vocab::load_bert guarantees the BERT special tokens).
  explicit WordPieceTokenizer(Vocab vocab, int max_chars_per_word = 100);

  // Appends the ids of `text` (any number of lines; newlines are whitespace). Throws
  // InputError "<source>: line N: invalid UTF-8" if `text` is not valid UTF-8.
  void encode(std::string_view text, std::vector<int32_t>& out,
              const std::string& source = "input") const;
  std::vector<int32_t> encode(std::string_view text) const;

  // The same, as token strings ("un", "##aff", "##able"): for tests and debugging.
  std::vector<std::string> tokenize(std::string_view text) const;

  const Vocab& vocab() const;
  int32_t unk_id() const;
  int32_t sep_id() const;  // kNoId if the vocabulary has no [SEP]

 private:
  struct Impl;
  std::shared_ptr<const Impl> impl_;
};

}  // namespace grassaudit
