// Shared by the libFuzzer targets: the only exception a reader may throw on bad input is
// grassaudit::InputError (the CLI turns it into one line + exit 2). Anything else escaping,
// and any sanitizer report, is a finding.
#pragma once
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

namespace fuzz {

// A per-process scratch file in /dev/shm (falls back to /tmp) holding `data`.
inline const std::string& write_scratch(const uint8_t* data, size_t size, const char* suffix) {
  static std::string path;
  static std::string dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  path = dir + "/grassaudit-fuzz-" + std::to_string(getpid()) + suffix;
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) __builtin_trap();
  if (size && std::fwrite(data, 1, size, f) != size) __builtin_trap();
  std::fclose(f);
  return path;
}

}  // namespace fuzz
