#include "text/detokenize.h"

#include <fmt/format.h>

#include "util/error.h"

namespace grassaudit {

std::string detokenize(const Vocab& vocab, const std::vector<int64_t>& ids, const std::string& tokenizer) {
  if (tokenizer != "wordpiece" && tokenizer != "word")
    throw InputError(fmt::format("detokenize: unknown tokenizer '{}' (wordpiece | word)", tokenizer));
  const bool wp = tokenizer == "wordpiece";
  const std::string newline_token = wp ? "[SEP]" : "<eos>";
  std::string out;
  bool line_start = true;
  for (int64_t id : ids) {
    if (id < 0 || id >= vocab.size())
      throw InputError(fmt::format("detokenize: id {} outside the vocabulary of {}", id, vocab.size()));
    const std::string& tok = vocab.token(static_cast<int32_t>(id));
    if (tok == newline_token) {
      out += '\n';
      line_start = true;
      continue;
    }
    if (wp && tok.size() > 2 && tok.compare(0, 2, "##") == 0) {
      out += tok.substr(2);
    } else {
      if (!line_start) out += ' ';
      out += tok;
    }
    line_start = false;
  }
  return out;
}

}  // namespace grassaudit
