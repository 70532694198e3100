#include "text/line_reader.h"

#include <sys/stat.h>
#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "util/error.h"

namespace grassaudit {
LineReader::LineReader(const std::string& path) : path_(path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    throw InputError("cannot read " + path + ": " + std::strerror(errno));
  }
  if (S_ISDIR(st.st_mode)) throw InputError("cannot read " + path + ": is a directory");
  // gzopen also reads plain files unchanged, so one code path serves both.
  gz_ = gzopen(path.c_str(), "rb");
  if (!gz_) throw InputError("cannot read " + path + ": " + std::strerror(errno));
  gzbuffer(static_cast<gzFile>(gz_), 1 << 17);
}

LineReader::~LineReader() {
  if (gz_) gzclose(static_cast<gzFile>(gz_));
}

bool LineReader::fill() {
  if (eof_) return false;
  char chunk[1 << 16];
  int n = gzread(static_cast<gzFile>(gz_), chunk, sizeof chunk);
  if (n < 0) {
    int err = Z_OK;
    const char* msg = gzerror(static_cast<gzFile>(gz_), &err);
    throw InputError(path_ + ": corrupt gzip data (" + (msg ? msg : "read error") + ")");
  }
  if (n == 0) {
    // zlib reports a stream that ends early (no end-of-stream block or no CRC/size trailer)
    // only through gzerror: Z_BUF_ERROR "unexpected end of file".
    int err = Z_OK;
    const char* msg = gzerror(static_cast<gzFile>(gz_), &err);
    if (err != Z_OK) {
      throw InputError(path_ + ": truncated gzip stream (" + (msg ? msg : "") +
                       "); the file is incomplete, download it again");
    }
    eof_ = true;
    return false;
  }
  buf_.erase(0, pos_);  // keep only the unconsumed partial line
  pos_ = 0;
  buf_.append(chunk, static_cast<size_t>(n));
  return true;
}

bool LineReader::next(std::string& line) {
  size_t search_from = pos_;
  while (true) {
    size_t nl = buf_.find('\n', search_from);
    if (nl != std::string::npos) {
      line.assign(buf_, pos_, nl - pos_);
      pos_ = nl + 1;
      break;
    }
    const size_t scanned = buf_.size() - pos_;  // unconsumed bytes already searched
    if (!fill()) {
      if (pos_ >= buf_.size()) return false;
      line.assign(buf_, pos_, std::string::npos);  // last line without "\n"
      pos_ = buf_.size();
      break;
    }
    // fill() moved the unconsumed tail to the front; resume the search where it stopped.
    search_from = pos_ + scanned;
  }
  if (!line.empty() && line.back() == '\r') line.pop_back();
  ++line_number_;
  return true;
}

}  // namespace grassaudit
