#pragma once
// Errors the CLI turns into one line on stderr and exit status 2.
// InputError: the user's input (files, flags, data) is wrong. Never used for bugs.
#include <stdexcept>
#include <string>

namespace grassaudit {

class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& what) : std::runtime_error(what) {}
};

// Exit codes shared by every subcommand.
constexpr int kExitOk = 0;
constexpr int kExitFinding = 1;  // e.g. the audit found a leak
constexpr int kExitUsage = 2;    // bad flags, bad input, unreadable files

}  // namespace grassaudit
