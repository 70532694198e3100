#include "text/lines.h"

namespace grassaudit {

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> out;
  for_each_line(text, [&](std::string_view line, long long) { out.push_back(line); });
  return out;
}

}  // namespace grassaudit
