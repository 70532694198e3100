#include "report/json_io.h"

#include "util/atomic_file.h"
#include "util/error.h"

namespace grassaudit {

using nlohmann::json;

json parse_json_file(const std::string& path) {
  const std::string text = read_file(path);
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    throw InputError(path + ": invalid JSON: " + e.what());
  }
}

std::vector<json> parse_jsonl_file(const std::string& path) {
  const std::string text = read_file(path);
  std::vector<json> out;
  size_t start = 0;
  size_t line_no = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    const bool terminated = end != std::string::npos;
    if (!terminated) end = text.size();
    ++line_no;
    const std::string line = text.substr(start, end - start);
    start = end + 1;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      out.push_back(json::parse(line));
    } catch (const json::exception& e) {
      // A last line with no newline that does not parse is a write cut short (the writer was
      // killed mid-line): skipped. Anything else that does not parse is a broken artifact.
      if (!terminated) break;
      throw InputError(path + ":" + std::to_string(line_no) + ": invalid JSON: " + e.what());
    }
  }
  return out;
}

}  // namespace grassaudit
