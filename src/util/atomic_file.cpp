#include "util/atomic_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "util/error.h"
#include "util/write_points.h"

namespace grassaudit {
namespace {

std::string temp_path_for(const std::string& path) {
  return path + ".tmp." + std::to_string(::getpid());
}

}  // namespace

void write_file_atomic_with(const std::string& path,
                            const std::function<void(const std::string& tmp_path)>& write) {
  // Only a plain regular file (or a path that does not exist yet) is replaced by rename. A
  // directory is an error. A device, pipe or symbolic link (/dev/full, a FIFO, /dev/stdout ->
  // /proc/self/fd/1, even when fd 1 is a regular file) is written in place: renaming a temporary
  // over it would replace the device node or the link itself (as root, in /dev), and removing it
  // on failure would delete it.
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    throw InputError("cannot write " + path + ": is a directory");
  struct stat lst {};
  if (::lstat(path.c_str(), &lst) == 0 && !S_ISREG(lst.st_mode)) {
    write(path);
    return;
  }
  const std::string tmp = temp_path_for(path);
  try {
    write_point(WritePoint::kWrite, tmp);
    write(tmp);
    fsync_file(tmp);
    write_point(WritePoint::kRename, path);
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
      throw InputError("cannot write " + path + ": " + std::strerror(errno));
    }
  } catch (...) {
    std::remove(tmp.c_str());
    throw;
  }
  // The rename is durable once the folder's entry is: without this a power loss can bring back
  // the old file (or none) beside newer files that were synced after it.
  fsync_dir(parent_dir_of(path));
}

void check_output_path(const std::string& path, const std::string& flag) {
  if (path.empty()) throw InputError(flag + " needs a file name");
  auto fail = [&](const std::string& why) { throw InputError("cannot write " + path + " (" + flag + "): " + why); };
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) fail("is a directory");
    if (!S_ISREG(st.st_mode)) return;  // a device or pipe: written in place
  }
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  struct stat dst {};
  if (::stat(dir.c_str(), &dst) != 0) fail("folder " + dir + ": " + std::strerror(errno));
  if (!S_ISDIR(dst.st_mode)) fail(dir + ": " + std::strerror(ENOTDIR));
  // Creating a file is the only reliable test: access(W_OK) says yes to root on /proc.
  const std::string probe = dir + "/.grassaudit-probe.tmp." + std::to_string(::getpid());
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) fail("folder " + dir + " is not writable (" + std::strerror(errno) + ")");
  ::close(fd);
  ::unlink(probe.c_str());
}

std::vector<std::string> remove_stale_temp_files(const std::string& dir) {
  std::vector<std::string> removed;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    const auto mark = name.rfind(".tmp.");
    if (mark == std::string::npos || mark == 0) continue;
    const std::string pid_text = name.substr(mark + 5);
    if (pid_text.empty() || pid_text.size() > 9 || pid_text.find_first_not_of("0123456789") != std::string::npos)
      continue;
    const pid_t pid = static_cast<pid_t>(std::stol(pid_text));
    const bool alive = pid == ::getpid() || ::kill(pid, 0) == 0 || errno == EPERM;
    std::error_code type_ec;
    if (alive || !entry.is_regular_file(type_ec)) continue;
    if (std::filesystem::remove(entry.path(), type_ec)) removed.push_back(entry.path().string());
  }
  return removed;
}

void write_file_atomic(const std::string& path, const std::string& contents) {
  write_file_atomic_with(path, [&](const std::string& tmp) {
    FILE* f = std::fopen(tmp.c_str(), "wb");
    if (!f) throw InputError("cannot write " + path + ": " + std::strerror(errno));
    size_t n = std::fwrite(contents.data(), 1, contents.size(), f);
    int err = errno;
    bool ok = n == contents.size();
    if (std::fclose(f) != 0) {
      ok = false;
      err = errno;
    }
    if (!ok) throw InputError("cannot write " + path + ": " + std::strerror(err));
  });
}

std::string read_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    throw InputError("cannot read " + path + ": " + std::strerror(errno));
  }
  if (S_ISDIR(st.st_mode)) throw InputError("cannot read " + path + ": is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot read " + path + ": " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw InputError("cannot read " + path + ": read error");
  return ss.str();
}

}  // namespace grassaudit
