#include "util/write_points.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "util/error.h"

namespace grassaudit {
namespace {

struct Switch {
  long kill_at = 0;        // 0 = never
  std::string log_path;    // "" = no record
  std::string snapshot_of, snapshot_to;  // "" = no snapshots
  long snapshot_at = 0;    // 0 = at every point
  long count = 0;
  bool active() const { return kill_at != 0 || !log_path.empty() || !snapshot_to.empty(); }
};

Switch& the_switch() {
  static Switch s = [] {
    Switch w;
    if (const char* k = std::getenv("GRASSAUDIT_KILL_AT_WRITE")) w.kill_at = std::strtol(k, nullptr, 10);
    if (const char* p = std::getenv("GRASSAUDIT_WRITE_POINTS")) w.log_path = p;
    const char* of = std::getenv("GRASSAUDIT_SNAPSHOT_OF");
    const char* to = std::getenv("GRASSAUDIT_SNAPSHOT_TO");
    if (of && to && *of && *to) {
      w.snapshot_of = of;
      w.snapshot_to = to;
      if (const char* at = std::getenv("GRASSAUDIT_SNAPSHOT_AT")) w.snapshot_at = std::strtol(at, nullptr, 10);
    }
    return w;
  }();
  return s;
}

// DIR as it is now, to DEST/N: a test's switch, so a failure ends the process loudly.
void snapshot(const Switch& s) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(s.snapshot_of, ec)) return;
  const fs::path dest = fs::path(s.snapshot_to) / std::to_string(s.count);
  fs::create_directories(dest.parent_path(), ec);
  fs::copy(s.snapshot_of, dest, fs::copy_options::recursive | fs::copy_options::copy_symlinks, ec);
  if (ec) {
    std::fprintf(stderr, "GRASSAUDIT_SNAPSHOT_TO: cannot copy %s to %s: %s\n", s.snapshot_of.c_str(),
                 dest.c_str(), ec.message().c_str());
    std::_Exit(70);
  }
}

void sync_fd_of(const std::string& path, int flags, const char* what) {
  const int fd = ::open(path.c_str(), flags);
  if (fd < 0) throw InputError(std::string("cannot open ") + what + " " + path + " to sync it: " + std::strerror(errno));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  // A folder or file system that cannot sync (EINVAL: a pipe, /dev/null) has nothing to make durable.
  if (rc != 0 && err != EINVAL && err != EROFS)
    throw InputError(std::string("cannot sync ") + what + " " + path + ": " + std::strerror(err));
}

}  // namespace

const char* write_point_name(WritePoint kind) {
  switch (kind) {
    case WritePoint::kWrite: return "write";
    case WritePoint::kFsync: return "fsync";
    case WritePoint::kRename: return "rename";
    case WritePoint::kFsyncDir: return "fsync-dir";
    case WritePoint::kAppend: return "append";
    case WritePoint::kTruncate: return "truncate";
  }
  return "write";
}

void write_point(WritePoint kind, const std::string& path) {
  Switch& s = the_switch();
  if (!s.active()) return;
  ++s.count;
  if (!s.log_path.empty()) {
    // O_APPEND and one write per line: the record survives the kill that may follow.
    const std::string line = std::to_string(s.count) + " " + write_point_name(kind) + " " + path + "\n";
    const int fd = ::open(s.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      ssize_t ignored = ::write(fd, line.data(), line.size());
      (void)ignored;
      ::close(fd);
    }
  }
  if (!s.snapshot_to.empty() && (s.snapshot_at == 0 || s.count == s.snapshot_at)) snapshot(s);
  if (s.count == s.kill_at) ::kill(::getpid(), SIGKILL);
}

void fsync_file(const std::string& path) {
  write_point(WritePoint::kFsync, path);
  sync_fd_of(path, O_RDONLY, "file");
}

void fsync_dir(const std::string& dir) {
  write_point(WritePoint::kFsyncDir, dir);
  sync_fd_of(dir, O_RDONLY | O_DIRECTORY, "folder");
}

std::string parent_dir_of(const std::string& path) {
  const std::string dir = std::filesystem::path(path).parent_path().string();
  return dir.empty() ? "." : dir;
}

}  // namespace grassaudit
