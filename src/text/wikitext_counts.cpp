#include "text/wikitext_counts.h"

#include <stdexcept>
#include <vector>

#include "text/lines.h"
#include "text/utf8.h"
#include "text/word_tokenizer.h"
#include "util/error.h"
#include "util/format_count.h"

namespace grassaudit {

WordCounts published_wikitext2_counts(const std::string& split) {
  // Lines of valid/test are not in README.md; they were counted on the published files
  // (python: sum(1 for _ in open(f))) alongside the README's token counts.
  if (split == "train") return {36718, 2088628};
  if (split == "valid") return {3760, 217646};
  if (split == "test") return {4358, 245569};
  throw std::out_of_range("no WikiText-2 split named " + split);
}

WordCounts count_words(std::string_view text, const std::string& name) {
  WordCounts c;
  std::vector<std::string_view> words;
  for_each_line(text, [&](std::string_view line, long long number) {
    if (find_invalid_utf8(line) != kValidUtf8) {
      throw InputError(name + ": line " + std::to_string(number) + ": invalid UTF-8");
    }
    words.clear();
    split_words(line, words);
    c.tokens += static_cast<int64_t>(words.size()) + 1;  // + <eos>
    c.lines = number;
  });
  return c;
}

std::string other_data_hint() { return "; pass --allow-other-data to use it anyway"; }

void check_counts(const std::string& name, const WordCounts& expected, const WordCounts& found) {
  if (found.tokens != expected.tokens) {
    throw InputError(name + ": expected " + format_count(expected.tokens) + " tokens, found " +
                     format_count(found.tokens) + other_data_hint());
  }
  if (found.lines != expected.lines) {
    throw InputError(name + ": expected " + format_count(expected.lines) + " lines, found " +
                     format_count(found.lines) + other_data_hint());
  }
}

}  // namespace grassaudit
