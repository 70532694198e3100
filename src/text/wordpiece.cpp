#include "text/wordpiece.h"

#include <stdexcept>
#include <unordered_map>

#include "text/basic_tokenizer.h"
#include "text/utf8.h"
#include "util/error.h"

namespace grassaudit {

struct WordPieceTokenizer::Impl {
  Vocab vocab;
  int max_chars = 100;
  int32_t unk = Vocab::kNoId;
  int32_t sep = Vocab::kNoId;
  // "##xyz" pieces keyed by "xyz" (views into vocab's immutable strings), so lookups of a
  // continuation need no string building.
  std::unordered_map<std::string_view, int32_t> continuation;

  // Greedy longest-match-first over code point boundaries of `word` (no whitespace).
  void wordpiece(std::string_view word, std::vector<int32_t>& out,
                 std::vector<size_t>& offsets) const {
    offsets.clear();
    for (size_t pos = 0; pos < word.size();) {
      offsets.push_back(pos);
      next_code_point(word, pos);
    }
    const size_t n_chars = offsets.size();
    offsets.push_back(word.size());
    if (n_chars > static_cast<size_t>(max_chars)) {
      out.push_back(unk);
      return;
    }
    const size_t first_new = out.size();
    size_t start = 0;
    while (start < n_chars) {
      int32_t found = Vocab::kNoId;
      size_t end = n_chars;
      for (; end > start; --end) {
        std::string_view piece = word.substr(offsets[start], offsets[end] - offsets[start]);
        if (start == 0) {
          found = vocab.find(piece);
        } else {
          auto it = continuation.find(piece);
          found = it == continuation.end() ? Vocab::kNoId : it->second;
        }
        if (found != Vocab::kNoId) break;
      }
      if (found == Vocab::kNoId) {  // no cover: the whole word is [UNK], like BERT
        out.resize(first_new);
        out.push_back(unk);
        return;
      }
      out.push_back(found);
      start = end;
    }
  }
};

WordPieceTokenizer::WordPieceTokenizer(Vocab vocab, int max_chars_per_word) {
  auto impl = std::make_shared<Impl>();
  impl->vocab = std::move(vocab);
  impl->max_chars = max_chars_per_word;
  impl->unk = impl->vocab.find("[UNK]");
  impl->sep = impl->vocab.find("[SEP]");
  if (impl->unk == Vocab::kNoId) {
    throw InputError("WordPiece vocabulary has no [UNK] token");
  }
  const auto& tokens = impl->vocab.tokens();
  for (size_t i = 0; i < tokens.size(); ++i) {
    std::string_view t = tokens[i];
    if (t.size() > 2 && t.compare(0, 2, "##") == 0) {
      impl->continuation.emplace(t.substr(2), static_cast<int32_t>(i));
    }
  }
  impl_ = std::move(impl);
}

void WordPieceTokenizer::encode(std::string_view text, std::vector<int32_t>& out,
                                const std::string& source) const {
  size_t bad = find_invalid_utf8(text);
  if (bad != kValidUtf8) {
    size_t line = 1;
    for (size_t i = 0; i < bad; ++i) line += text[i] == '\n';
    throw InputError(source + ": line " + std::to_string(line) + ": invalid UTF-8");
  }
  std::vector<std::string> words;
  bert_basic_tokenize(text, words);
  std::vector<size_t> offsets;
  for (const std::string& w : words) impl_->wordpiece(w, out, offsets);
}

std::vector<int32_t> WordPieceTokenizer::encode(std::string_view text) const {
  std::vector<int32_t> out;
  encode(text, out);
  return out;
}

std::vector<std::string> WordPieceTokenizer::tokenize(std::string_view text) const {
  std::vector<std::string> out;
  for (int32_t id : encode(text)) out.push_back(impl_->vocab.token(id));
  return out;
}

const Vocab& WordPieceTokenizer::vocab() const { return impl_->vocab; }
int32_t WordPieceTokenizer::unk_id() const { return impl_->unk; }
int32_t WordPieceTokenizer::sep_id() const { return impl_->sep; }

}  // namespace grassaudit
