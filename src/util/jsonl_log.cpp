#include "util/jsonl_log.h"

#include <cerrno>
#include <cstring>

#include "util/error.h"

namespace grassaudit {

JsonlLog::JsonlLog(std::string path, bool append)
    : path_(std::move(path)), out_(path_, append ? std::ios::app : std::ios::trunc) {
  if (!out_) throw InputError("cannot open " + path_ + " for appending: " + std::strerror(errno));
}

void JsonlLog::write(const std::string& line) {
  if (line.find('\n') != std::string::npos) throw std::logic_error("JsonlLog: a record spans lines");
  errno = 0;
  out_ << line << '\n';
  out_.flush();
  if (!out_) {
    const int err = errno;
    throw InputError("cannot write to " + path_ + ": " + (err ? std::strerror(err) : "write failed"));
  }
}

}  // namespace grassaudit
