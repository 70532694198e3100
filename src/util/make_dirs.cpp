#include "util/make_dirs.h"

#include <filesystem>
#include <system_error>

#include "util/error.h"

namespace grassaudit {

void make_dirs(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) throw InputError("cannot create directory " + path + ": " + ec.message());
  if (!std::filesystem::is_directory(path, ec)) {
    throw InputError("cannot create directory " + path + ": not a directory");
  }
}

}  // namespace grassaudit
