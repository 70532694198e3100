#include "util/error_text.h"

#include <regex>

#include "util/string_affix.h"

namespace grassaudit {
std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t\r\n") + 1 - b);
}

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

std::string first_meaningful_line(const std::string& text) {
  static const std::regex enforce(R"(^\[enforce fail at [^\]]*\]\s*\.?\s*)");
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = std::regex_replace(trim(text.substr(start, end - start)), enforce, "");
    if (!line.empty() && !starts_with(line, "Exception raised from") && !starts_with(line, "frame #")) return line;
    start = end + 1;
  }
  return {};
}

std::string interpreter_error_line(const std::string& text) {
  auto pos = text.rfind("RuntimeError:");
  if (pos == std::string::npos) pos = text.rfind("Error:");
  return first_meaningful_line(pos == std::string::npos ? text : text.substr(pos));
}

}  // namespace grassaudit
