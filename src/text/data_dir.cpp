#include "text/data_dir.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "util/error.h"

namespace grassaudit {
namespace {

std::string compiled_source_dir() {
#ifdef GRASSAUDIT_SOURCE_DIR
  return GRASSAUDIT_SOURCE_DIR;
#else
  return "";
#endif
}

std::string env_data_dir() {
  const char* v = std::getenv("GRASSAUDIT_DATA");
  return v ? v : "";
}

std::string join(const std::string& dir, const std::string& rel) {
  if (dir.empty() || dir.back() == '/') return dir + rel;
  return dir + "/" + rel;
}

bool is_directory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

std::vector<std::string> data_dir_candidates(const std::string& flag_value,
                                             const std::string& env_value,
                                             const std::string& source_dir) {
  if (!flag_value.empty()) return {flag_value};
  if (!env_value.empty()) return {env_value};
  std::vector<std::string> out{"../shared/data"};
  if (!source_dir.empty()) out.push_back(join(source_dir, "../shared/data"));
  return out;
}

std::string resolve_data_dir(const std::string& flag_value) {
  auto candidates = data_dir_candidates(flag_value, env_data_dir(), compiled_source_dir());
  for (const auto& c : candidates) {
    if (is_directory(c)) return c;
  }
  return candidates.front();
}

std::string require_data_file(const std::string& data_dir_flag, const std::string& relative) {
  auto candidates = data_dir_candidates(data_dir_flag, env_data_dir(), compiled_source_dir());
  std::string looked;
  for (const auto& dir : candidates) {
    const std::string path = join(dir, relative);
    struct stat st {};
    std::string why;
    if (::stat(path.c_str(), &st) != 0) {
      why = std::strerror(errno);
    } else if (S_ISDIR(st.st_mode)) {
      why = "is a directory";
    } else {
      return path;
    }
    looked += (looked.empty() ? "" : ", ") + path + " (" + why + ")";
  }
  throw InputError("missing data file " + relative + "; looked in: " + looked +
                   "; pass --data-dir or set GRASSAUDIT_DATA to the folder holding it");
}

}  // namespace grassaudit
