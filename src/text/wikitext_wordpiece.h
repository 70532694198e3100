#pragma once
// WikiText-2 through BERT WordPiece (the paper's setting). Two WikiText-specific choices:
//  * Each line's wordpieces are followed by [SEP] as the line terminator: the analogue of
//    the word-level "<eos>", so every line, empty ones included, ends with exactly one [SEP]
//    and the stream keeps the article/paragraph structure the word-level model sees.
//  * The literal word "<unk>" (WikiText's own out-of-vocabulary marker) maps to [UNK]: the
//    closest like-for-like, instead of BERT's split "<", "un", "##k", ">".
//  Everything else is left as is: "@-@", "@,@", "@.@" become "@", "-", "@" etc.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace grassaudit {

class WordPieceTokenizer;

// Appends the ids of `text` (a whole WikiText file) to `out`. Throws InputError
// "<name>: line N: invalid UTF-8". Requires [SEP] in the vocabulary (InputError otherwise).
void encode_wikitext_wordpiece(std::string_view text, const std::string& name,
                               const WordPieceTokenizer& tokenizer, std::vector<int32_t>& out);

}  // namespace grassaudit
