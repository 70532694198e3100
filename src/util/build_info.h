#pragma once
// What built this binary: the grassaudit version, and the git commit of the source tree with a
// flag for uncommitted changes to tracked files. Written into every run's provenance, so a
// committed artifact says which code produced it. The values are generated at build time
// (src/write_build_info.cmake, run on every build; the file is rewritten only when they change).
#include <string>

namespace grassaudit {

std::string grassaudit_version();  // e.g. "0.3.0"
std::string build_git_commit();    // 40 hex digits, or "unknown" (not built from a git checkout)
bool build_git_dirty();            // tracked files differed from the commit at build time

}  // namespace grassaudit
