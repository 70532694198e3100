#pragma once
// Reads a text file line by line, transparently gunzipping it if it starts with the gzip
// magic bytes 1f 8b. A truncated or corrupt gzip stream is an error, never a short file.
#include <cstdint>
#include <memory>
#include <string>

#include "util/non_copyable.h"

namespace grassaudit {

class LineReader : NonCopyable {
 public:
  // Throws InputError naming `path` if it is missing, a directory or unreadable.
  explicit LineReader(const std::string& path);
  ~LineReader();

  // Next line without its "\n" (or "\r\n"); false at the end. The last line needs no "\n".
  // Throws InputError "<path>: truncated gzip stream (...)" or "<path>: corrupt gzip ..."
  bool next(std::string& line);

  int64_t line_number() const { return line_number_; }  // of the line last returned
  const std::string& path() const { return path_; }

 private:
  bool fill();  // reads more bytes into buf_; false at the end of the data

  std::string path_;
  void* gz_ = nullptr;  // gzFile; void* keeps zlib.h out of this header
  std::string buf_;
  size_t pos_ = 0;
  bool eof_ = false;
  int64_t line_number_ = 0;
};

}  // namespace grassaudit
