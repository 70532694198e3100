#include "text/vocab.h"

#include <stdexcept>
#include <unordered_map>

#include "text/utf8.h"
#include "util/atomic_file.h"
#include "util/error.h"

namespace grassaudit {

// The index keys view into `tokens`, so the table is built once and never mutated.
struct Vocab::Table {
  std::vector<std::string> tokens;
  std::unordered_map<std::string_view, int32_t> index;
};

namespace {

std::string base_name(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

Vocab::Vocab() : table_(std::make_shared<Table>()) {}

Vocab::Vocab(std::shared_ptr<const Table> table) : table_(std::move(table)) {}

Vocab Vocab::from_tokens(std::vector<std::string> tokens, const std::string& source) {
  auto table = std::make_shared<Table>();
  table->tokens = std::move(tokens);
  table->index.reserve(table->tokens.size());
  for (size_t i = 0; i < table->tokens.size(); ++i) {
    auto [it, inserted] =
        table->index.emplace(std::string_view(table->tokens[i]), static_cast<int32_t>(i));
    if (!inserted) {
      throw InputError(source + ": duplicate token \"" + table->tokens[i] + "\" on lines " +
                       std::to_string(it->second + 1) + " and " + std::to_string(i + 1));
    }
  }
  return Vocab(std::move(table));
}

Vocab Vocab::load_bert(const std::string& path) {
  return parse_bert(read_file(path), path);  // InputError if missing or a directory
}

Vocab Vocab::parse_bert(std::string_view bytes, const std::string& path) {
  const std::string name = base_name(path);
  if (bytes.empty()) throw InputError(name + ": empty vocabulary file (" + path + ")");
  std::vector<std::string> tokens;
  size_t start = 0;
  while (start < bytes.size()) {
    size_t end = bytes.find('\n', start);
    if (end == std::string::npos) end = bytes.size();  // last line without a newline
    std::string_view line(bytes.data() + start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);  // tolerate CRLF
    auto where = [&] { return name + ": line " + std::to_string(tokens.size() + 1); };
    if (find_invalid_utf8(line) != kValidUtf8) throw InputError(where() + ": invalid UTF-8");
    if (line.empty()) throw InputError(where() + ": empty token");
    tokens.emplace_back(line);
    start = end + 1;
  }
  Vocab v = from_tokens(std::move(tokens), name);
  for (const char* special : {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}) {
    if (v.find(special) == kNoId) {
      throw InputError(name + ": missing special token " + special +
                       " (not a BERT vocabulary?)");
    }
  }
  return v;
}

int32_t Vocab::find(std::string_view token) const {
  auto it = table_->index.find(token);
  return it == table_->index.end() ? kNoId : it->second;
}

int32_t Vocab::at(std::string_view token) const {
  int32_t id = find(token);
  if (id == kNoId) throw std::out_of_range("token not in vocabulary: " + std::string(token));
  return id;
}

const std::string& Vocab::token(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= table_->tokens.size()) {
    throw std::out_of_range("token id out of range: " + std::to_string(id));
  }
  return table_->tokens[static_cast<size_t>(id)];
}

const std::vector<std::string>& Vocab::tokens() const { return table_->tokens; }

int64_t Vocab::size() const { return static_cast<int64_t>(table_->tokens.size()); }

}  // namespace grassaudit
