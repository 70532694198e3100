#include "text/basic_tokenizer.h"

#include <utf8proc.h>

#include <cstdint>

#include "text/unicode_class.h"
#include "text/utf8.h"

namespace grassaudit {
namespace {

// BERT _clean_text + _tokenize_chinese_chars: drops NUL, U+FFFD and control characters,
// turns whitespace into ' ', and surrounds CJK ideographs with spaces.
void clean(std::string_view text, std::vector<int32_t>& cps) {
  size_t pos = 0;
  while (pos < text.size()) {
    int32_t cp = next_code_point(text, pos);
    if (cp == 0 || cp == 0xFFFD || is_bert_control(cp)) continue;
    if (is_bert_whitespace(cp)) {
      cps.push_back(' ');
    } else if (is_cjk_ideograph(cp)) {
      cps.push_back(' ');
      cps.push_back(cp);
      cps.push_back(' ');
    } else {
      cps.push_back(cp);
    }
  }
}

// Lower-case, then NFD (utf8proc, with canonical reordering) and drop category Mn:
// BERT's lower() + _run_strip_accents. Appends the result to `out`.
void lower_and_strip_accents(const int32_t* cps, size_t n, std::vector<int32_t>& out,
                             std::string& scratch, std::vector<int32_t>& nfd) {
  bool ascii = true;
  for (size_t i = 0; i < n; ++i) ascii = ascii && cps[i] < 0x80;
  if (ascii) {  // fast path: NFD is the identity on ASCII and ASCII has no marks
    for (size_t i = 0; i < n; ++i) {
      int32_t c = cps[i];
      out.push_back(c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c);
    }
    return;
  }
  scratch.clear();
  for (size_t i = 0; i < n; ++i) append_utf8(utf8proc_tolower(cps[i]), scratch);
  const auto* bytes = reinterpret_cast<const utf8proc_uint8_t*>(scratch.data());
  const auto len = static_cast<utf8proc_ssize_t>(scratch.size());
  const int options = UTF8PROC_DECOMPOSE | UTF8PROC_STABLE;
  // NFD never needs more than ~18x code points per input; size by asking utf8proc.
  nfd.resize(scratch.size() * 4 + 16);
  utf8proc_ssize_t m = utf8proc_decompose(bytes, len, nfd.data(),
                                          static_cast<utf8proc_ssize_t>(nfd.size()),
                                          static_cast<utf8proc_option_t>(options));
  if (m > static_cast<utf8proc_ssize_t>(nfd.size())) {
    nfd.resize(static_cast<size_t>(m));
    m = utf8proc_decompose(bytes, len, nfd.data(), m, static_cast<utf8proc_option_t>(options));
  }
  if (m < 0) {  // cannot happen on valid input; keep the lower-cased text rather than lose it
    for (size_t i = 0; i < n; ++i) out.push_back(utf8proc_tolower(cps[i]));
    return;
  }
  for (utf8proc_ssize_t i = 0; i < m; ++i) {
    if (!is_nonspacing_mark(nfd[static_cast<size_t>(i)])) out.push_back(nfd[static_cast<size_t>(i)]);
  }
}

// BERT _run_split_on_punc: every punctuation character becomes its own token.
void split_on_punctuation(const std::vector<int32_t>& cps, std::vector<std::string>& out) {
  std::string current;
  for (int32_t cp : cps) {
    if (is_bert_punctuation(cp)) {
      if (!current.empty()) out.push_back(std::move(current));
      current.clear();
      std::string p;
      append_utf8(cp, p);
      out.push_back(std::move(p));
    } else {
      append_utf8(cp, current);
    }
  }
  if (!current.empty()) out.push_back(std::move(current));
}

}  // namespace

void bert_basic_tokenize(std::string_view text, std::vector<std::string>& out) {
  std::vector<int32_t> cps;
  cps.reserve(text.size() + 8);
  clean(text, cps);

  std::vector<int32_t> word;
  std::string scratch;
  std::vector<int32_t> nfd;
  size_t i = 0;
  while (i < cps.size()) {
    // whitespace_tokenize is Python's str.split(): its whitespace set, not BERT's.
    if (is_python_space(cps[i])) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < cps.size() && !is_python_space(cps[j])) ++j;
    word.clear();
    lower_and_strip_accents(cps.data() + i, j - i, word, scratch, nfd);
    split_on_punctuation(word, out);
    i = j;
  }
}

}  // namespace grassaudit
