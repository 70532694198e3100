#pragma once
// Ids back to text, for generated samples: WordPiece pieces "##x" join the piece before them,
// [SEP] (the end of a WikiText line in our stream) is a newline; word level joins with spaces,
// "<eos>" is a newline. Not an inverse of tokenization (case and spacing are lost), a readable
// rendering.
#include <cstdint>
#include <string>
#include <vector>

#include "text/vocab.h"

namespace grassaudit {

// tokenizer: "wordpiece" | "word" (InputError otherwise); ids outside the vocabulary: InputError.
std::string detokenize(const Vocab& vocab, const std::vector<int64_t>& ids, const std::string& tokenizer);

}  // namespace grassaudit
