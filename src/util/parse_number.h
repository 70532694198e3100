#pragma once
// A number that must be the whole of a text (a flag's value, a list item, an environment
// variable): the standard parsers stop at the first character that does not fit, and throw on
// an empty text or one out of range; every reader here wants "this text is a number, or not".
#include <optional>
#include <string>

namespace grassaudit {

// `text` read by std::stoll / std::stod when they consume all of it (leading blanks and a sign
// are theirs to accept); nullopt when it is empty, has anything after the number, or is out of
// range.
std::optional<long long> parse_whole_integer(const std::string& text);
std::optional<double> parse_whole_double(const std::string& text);

}  // namespace grassaudit
