#pragma once
// Splitting text into lines the way Python's text mode does (universal newlines), so that
// line counts match pytorch/examples: "\n", "\r\n" and "\r" end a line; a final line without
// a terminator still counts; "" has no lines.
#include <string_view>
#include <vector>

namespace grassaudit {

// Views into `text` (terminators excluded); valid while `text` is alive.
std::vector<std::string_view> split_lines(std::string_view text);

// Calls f(line_view, line_number) for each line (numbers from 1), without building a vector.
template <typename F>
void for_each_line(std::string_view text, F&& f) {
  size_t start = 0;
  long long number = 0;
  while (start < text.size()) {
    size_t end = text.find_first_of("\r\n", start);
    if (end == std::string_view::npos) end = text.size();
    f(text.substr(start, end - start), ++number);
    if (end < text.size() && text[end] == '\r' && end + 1 < text.size() && text[end + 1] == '\n') {
      ++end;
    }
    start = end + 1;
  }
}

}  // namespace grassaudit
