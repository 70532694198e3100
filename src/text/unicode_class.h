#pragma once
// Character classes used by the tokenizers, from utf8proc's Unicode tables (no hand-written
// tables except BERT's CJK block list, which is BERT's own definition, not Unicode's).
#include <cstdint>

namespace grassaudit {

// Python's str.isspace(): bidi class WS, B or S, or category Zs. pytorch/examples splits
// WikiText lines with str.split(), so the word tokenizer splits on exactly these.
bool is_python_space(int32_t cp);

// BERT _is_whitespace: space, \t, \n, \r, or category Zs.
bool is_bert_whitespace(int32_t cp);

// BERT _is_control (HF transformers / tokenizers): category C* except \t, \n, \r.
bool is_bert_control(int32_t cp);

// BERT _is_punctuation: ASCII 33-47, 58-64, 91-96, 123-126 (so "$", "^", "`" count), or any
// Unicode P* category.
bool is_bert_punctuation(int32_t cp);

// BERT _is_chinese_char: the CJK Unified Ideographs blocks (not Hangul, Hiragana, Katakana).
bool is_cjk_ideograph(int32_t cp);

// Unicode category Mn (nonspacing mark): what BERT strips after NFD.
bool is_nonspacing_mark(int32_t cp);

}  // namespace grassaudit
