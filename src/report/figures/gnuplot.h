#pragma once
// Running gnuplot as a subprocess (no shell involved).
#include <string>

namespace grassaudit {

// True when `program` can be executed: a name with '/' is checked as a path, otherwise each
// directory of $PATH is searched.
bool find_program(const std::string& program);

// Runs `program script` with working directory `cwd` and LC_ALL=C. Throws std::runtime_error
// carrying gnuplot's output when it cannot be started or exits non-zero.
void run_gnuplot(const std::string& program, const std::string& cwd, const std::string& script);

}  // namespace grassaudit
