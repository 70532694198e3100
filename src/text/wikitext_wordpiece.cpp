#include "text/wikitext_wordpiece.h"

#include "text/lines.h"
#include "text/utf8.h"
#include "text/vocab.h"
#include "text/wordpiece.h"
#include "util/error.h"

namespace grassaudit {

void encode_wikitext_wordpiece(std::string_view text, const std::string& name,
                               const WordPieceTokenizer& tokenizer, std::vector<int32_t>& out) {
  const int32_t sep = tokenizer.sep_id();
  const int32_t unk = tokenizer.unk_id();
  if (sep == Vocab::kNoId) throw InputError(name + ": WordPiece vocabulary has no [SEP]");
  for_each_line(text, [&](std::string_view line, long long number) {
    const std::string where = name + ": line " + std::to_string(number);
    if (find_invalid_utf8(line) != kValidUtf8) throw InputError(where + ": invalid UTF-8");
    // Pre-splitting on ' ' and '\t' (whitespace to BERT too) changes nothing in BERT's
    // output and lets us spot the "<unk>" words.
    size_t start = 0;
    while (start < line.size()) {
      size_t end = line.find_first_of(" \t", start);
      if (end == std::string_view::npos) end = line.size();
      std::string_view word = line.substr(start, end - start);
      if (word == "<unk>") {
        out.push_back(unk);
      } else if (!word.empty()) {
        tokenizer.encode(word, out, where);
      }
      start = end + 1;
    }
    out.push_back(sep);
  });
}

}  // namespace grassaudit
