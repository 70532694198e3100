#pragma once
// An append-only log of one record per line (metrics.jsonl). Every line is flushed as it is
// written and a failed write (full disk, file gone read-only) is an error naming the file, not
// a silently shorter log.
#include <fstream>
#include <string>

namespace grassaudit {

class JsonlLog {
 public:
  // Opens `path` for appending (created if missing), or emptied first when !append. InputError
  // if it cannot be opened.
  explicit JsonlLog(std::string path, bool append = true);
  // Appends `line` (no newline inside) and a newline, flushed. InputError on failure.
  void write(const std::string& line);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::ofstream out_;
};

}  // namespace grassaudit
