#pragma once
// BERT's BasicTokenizer, uncased (as in HF transformers' BertTokenizer for
// bert-base-uncased): clean text, isolate CJK ideographs, split on whitespace, lower-case,
// NFD and drop nonspacing marks (accents), split off punctuation.
// Lower-casing is utf8proc's simple per-character mapping, not Python's full str.lower():
// they differ only on a handful of characters (final sigma, dotted capital I), and on the
// WikiText-2 files the output is id-for-id identical to a Python port of HF's code.
// Not done: "never_split" handling of literal special tokens such as "[SEP]" in the text;
// such strings are split like any other text ("[", "sep", "]").
#include <string>
#include <string_view>
#include <vector>

namespace grassaudit {

// Appends the basic tokens of `text` (must be valid UTF-8; see find_invalid_utf8) to `out`,
// each a non-empty UTF-8 string with no whitespace.
void bert_basic_tokenize(std::string_view text, std::vector<std::string>& out);

}  // namespace grassaudit
