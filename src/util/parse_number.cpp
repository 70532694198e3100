#include "util/parse_number.h"

#include <stdexcept>

namespace grassaudit {
namespace {

template <class T, class Parse>
std::optional<T> parse_whole(const std::string& text, Parse parse) {
  size_t used = 0;
  T value{};
  try {
    value = parse(text, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (used != text.size()) return std::nullopt;
  return value;
}

}  // namespace

std::optional<long long> parse_whole_integer(const std::string& text) {
  return parse_whole<long long>(text, [](const std::string& s, size_t* used) { return std::stoll(s, used); });
}

std::optional<double> parse_whole_double(const std::string& text) {
  return parse_whole<double>(text, [](const std::string& s, size_t* used) { return std::stod(s, used); });
}

}  // namespace grassaudit
