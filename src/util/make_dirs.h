#pragma once
#include <string>

namespace grassaudit {

// mkdir -p: creates `path` and missing parents. InputError naming the path if it cannot
// (a file in the way, no permission).
void make_dirs(const std::string& path);

}  // namespace grassaudit
