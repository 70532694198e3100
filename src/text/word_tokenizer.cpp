#include "text/word_tokenizer.h"

#include <unordered_map>

#include "text/lines.h"
#include "text/unicode_class.h"
#include "text/utf8.h"
#include "util/error.h"

namespace grassaudit {

void split_words(std::string_view line, std::vector<std::string_view>& out) {
  size_t pos = 0;
  size_t word_start = std::string_view::npos;
  while (pos < line.size()) {
    size_t cp_start = pos;
    bool space = is_python_space(next_code_point(line, pos));
    if (space && word_start != std::string_view::npos) {
      out.push_back(line.substr(word_start, cp_start - word_start));
      word_start = std::string_view::npos;
    } else if (!space && word_start == std::string_view::npos) {
      word_start = cp_start;
    }
  }
  if (word_start != std::string_view::npos) out.push_back(line.substr(word_start));
}

WordCorpus word_tokenize(const std::vector<NamedText>& texts) {
  // Owning keys while building; handed to Vocab (which re-indexes) at the end.
  std::unordered_map<std::string, int32_t> ids;
  std::vector<std::string> order;
  auto id_of = [&](std::string_view word) {
    auto it = ids.find(std::string(word));
    if (it != ids.end()) return it->second;
    int32_t id = static_cast<int32_t>(order.size());
    ids.emplace(std::string(word), id);
    order.emplace_back(word);
    return id;
  };

  WordCorpus corpus;
  std::vector<std::string_view> words;
  for (const NamedText& t : texts) {
    std::vector<int32_t> out;
    out.reserve(t.text.size() / 5);  // ~5 bytes per token in WikiText
    int64_t lines = 0;
    for_each_line(t.text, [&](std::string_view line, long long number) {
      if (find_invalid_utf8(line) != kValidUtf8) {
        throw InputError(t.name + ": line " + std::to_string(number) + ": invalid UTF-8");
      }
      words.clear();
      split_words(line, words);
      for (std::string_view w : words) out.push_back(id_of(w));
      out.push_back(id_of("<eos>"));
      lines = number;
    });
    corpus.ids.push_back(std::move(out));
    corpus.lines.push_back(lines);
  }
  corpus.vocab = Vocab::from_tokens(std::move(order), "word vocabulary");
  return corpus;
}

}  // namespace grassaudit
