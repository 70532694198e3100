#pragma once
// Where the shared data sets live (see ../shared/data/README.md). Lookup order:
//   1. the --data-dir flag, if non-empty;
//   2. else $GRASSAUDIT_DATA, if non-empty;
//   3. else "../shared/data" relative to the current directory, if it exists;
//   4. else GRASSAUDIT_SOURCE_DIR "/../shared/data" (compile-time macro, when defined).
// An explicit flag or environment value is never second-guessed by the fallbacks.
#include <string>
#include <vector>

namespace grassaudit {

// The folders to look in, in order, given the flag, the value of $GRASSAUDIT_DATA ("" if
// unset) and the source dir ("" if unknown). Pure; exposed for tests.
std::vector<std::string> data_dir_candidates(const std::string& flag_value,
                                             const std::string& env_value,
                                             const std::string& source_dir);

// The data folder to use: the first candidate that is a directory, else the first
// candidate (so later errors name the place the user most likely meant).
std::string resolve_data_dir(const std::string& flag_value);

// `relative` (e.g. "wikitext-2/wiki.train.tokens") inside the first candidate folder where
// it exists as a regular file. Throws InputError naming the missing file and every path
// looked at, with the reason for each (missing, a directory).
std::string require_data_file(const std::string& data_dir_flag, const std::string& relative);

}  // namespace grassaudit
