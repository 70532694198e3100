#pragma once
// A token <-> id table. Ids are dense: 0 .. size()-1, in the order tokens were given.
// Copies are cheap and share the (immutable) table.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace grassaudit {

class Vocab {
 public:
  static constexpr int32_t kNoId = -1;

  Vocab();  // empty

  // From a list of distinct tokens; id = position. Throws InputError naming `source` and
  // both positions (1-based) of the first duplicate.
  static Vocab from_tokens(std::vector<std::string> tokens, const std::string& source);

  // A BERT vocab.txt: one token per line, id = line index (0-based). Throws InputError
  // ("vocab.txt: line 7: ...") if the file is missing, a directory, empty, not UTF-8, has an
  // empty line, a duplicate token, or lacks [PAD] [UNK] [CLS] [SEP] [MASK].
  static Vocab load_bert(const std::string& path);
  // The same from the file's bytes (a caller that also hashes them reads the file once);
  // `path` names the file in messages.
  static Vocab parse_bert(std::string_view bytes, const std::string& path);

  // Id of `token`, or kNoId.
  int32_t find(std::string_view token) const;
  // Id of `token`; throws std::out_of_range if absent (a bug: check with find first).
  int32_t at(std::string_view token) const;
  // Token of `id`; throws std::out_of_range if id is not in [0, size()).
  const std::string& token(int32_t id) const;
  const std::vector<std::string>& tokens() const;
  int64_t size() const;

 private:
  struct Table;
  explicit Vocab(std::shared_ptr<const Table> table);
  std::shared_ptr<const Table> table_;
};

}  // namespace grassaudit
