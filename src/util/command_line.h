#pragma once
// The command line this process was started with, shell-quoted, for run provenance: a committed
// artifact says exactly which command produced it. main() records it once.
#include <string>

namespace grassaudit {

void set_command_line(int argc, char** argv);
// "grassaudit train --mixer past ..." (argv[0] as given); "" when never set (tests).
std::string command_line();
// One argument quoted for a POSIX shell when it needs it ('it'\''s' style).
std::string shell_quote(const std::string& arg);

}  // namespace grassaudit
