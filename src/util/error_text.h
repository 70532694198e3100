#pragma once
// One line of a library's error text for our one-line messages: LibTorch's texts may start with
// blank lines, carry "[enforce fail at FILE:LINE] ." prefixes, or (2.x) hold only a backtrace
// ("Exception raised from ...", "frame #0: ...") where 1.13 had the message.
#include <exception>
#include <string>

namespace grassaudit {

// s without leading and trailing blanks (spaces, tabs, CR, LF).
std::string trim(const std::string& s);

// s up to its first newline, as it is (no trimming).
std::string first_line(const std::string& s);

// The first line that says something (trimmed, enforce prefix removed, backtrace lines skipped);
// "" only when there is none.
std::string first_meaningful_line(const std::string& text);

// A TorchScript interpreter report ("The following operation failed in the TorchScript
// interpreter.", a traceback, then "RuntimeError: ..."): from its last "RuntimeError:" (else
// "Error:") on, the first meaningful line; a text without either: first_meaningful_line.
std::string interpreter_error_line(const std::string& text);

// Runs `change` (a model moved or converted by the library underneath): true when it returns,
// false when it throws, with the failure's first meaningful line in *why (if given).
template <class Change>
bool attempt_or_explain(std::string* why, Change&& change) {
  try {
    change();
    return true;
  } catch (const std::exception& e) {
    if (why) *why = first_meaningful_line(e.what());
    return false;
  }
}

}  // namespace grassaudit
