#include "text/snli.h"

#include <nlohmann/json.hpp>

#include "text/line_reader.h"
#include "util/error.h"

namespace grassaudit {
namespace {

// The label id, or -1 for "-" (no gold label), or -2 for anything else.
int32_t parse_label(const std::string& s) {
  if (s == "entailment") return kEntailment;
  if (s == "neutral") return kNeutral;
  if (s == "contradiction") return kContradiction;
  if (s == "-") return -1;
  return -2;
}

std::string string_field(const nlohmann::json& record, const char* field,
                         const std::string& where) {
  auto it = record.find(field);
  if (it == record.end()) throw InputError(where + ": missing field \"" + field + "\"");
  if (!it->is_string()) throw InputError(where + ": field \"" + field + "\" is not a string");
  return it->get<std::string>();
}

}  // namespace

const char* snli_label_name(int32_t label) {
  switch (label) {
    case kEntailment: return "entailment";
    case kNeutral: return "neutral";
    case kContradiction: return "contradiction";
    default: return "?";
  }
}

SnliData read_snli(const std::string& path) {
  LineReader reader(path);
  SnliData data;
  std::string line;
  while (reader.next(line)) {
    const std::string where = path + ": line " + std::to_string(reader.line_number());
    nlohmann::json record;
    try {
      record = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      // e.what() is one line: "[json.exception.parse_error.101] parse error at ...", or
      // out_of_range.406 for a number too large to represent (it quotes the whole number).
      std::string what = e.what();
      if (what.size() > 200) what = what.substr(0, 200) + "...";
      throw InputError(where + ": not JSON: " + what);
    }
    if (!record.is_object()) throw InputError(where + ": not a JSON object");
    ++data.lines;
    const std::string gold = string_field(record, "gold_label", where);
    const int32_t label = parse_label(gold);
    if (label == -2) {
      throw InputError(where + ": unknown gold_label \"" + gold +
                       "\" (expected entailment, neutral, contradiction or -)");
    }
    // Sentences are checked even on skipped records: a malformed file should fail loudly.
    std::string s1 = string_field(record, "sentence1", where);
    std::string s2 = string_field(record, "sentence2", where);
    if (label == -1) {
      ++data.skipped_no_label;
      continue;
    }
    ++data.label_counts[static_cast<size_t>(label)];
    data.pairs.push_back({std::move(s1), std::move(s2), label});
  }
  if (data.lines == 0) throw InputError(path + ": no records (empty file)");
  return data;
}

}  // namespace grassaudit
