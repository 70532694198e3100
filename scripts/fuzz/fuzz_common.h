// Shared by the libFuzzer targets: the only exception a reader may throw on bad input is
// grassaudit::InputError (the CLI turns it into one line + exit 2). Anything else escaping,
// and any sanitizer report, is a finding.
#pragma once
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

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

namespace fuzz {

// A zip of stored (uncompressed) entries, as PyTorch's stream writer makes them, without CRCs
// (the reader does not check them): lets a target put fuzzed bytes into one record of an
// otherwise well-formed archive, so the fuzzer spends its time past the zip layer.
inline std::string stored_zip(const std::vector<std::pair<std::string, std::string>>& entries) {
  auto u16 = [](std::string& s, uint32_t v) { s += char(v & 0xff); s += char((v >> 8) & 0xff); };
  auto u32 = [&](std::string& s, uint32_t v) { u16(s, v & 0xffff); u16(s, v >> 16); };
  std::string out, central;
  for (const auto& [name, data] : entries) {
    const uint32_t offset = static_cast<uint32_t>(out.size());
    u32(out, 0x04034b50); u16(out, 20); u16(out, 0); u16(out, 0); u16(out, 0); u16(out, 0);
    u32(out, 0); u32(out, data.size()); u32(out, data.size());
    u16(out, name.size()); u16(out, 0);
    out += name;
    out += data;
    u32(central, 0x02014b50); u16(central, 20); u16(central, 20); u16(central, 0); u16(central, 0);
    u16(central, 0); u16(central, 0); u32(central, 0); u32(central, data.size());
    u32(central, data.size()); u16(central, name.size()); u16(central, 0); u16(central, 0);
    u16(central, 0); u16(central, 0); u32(central, 0); u32(central, offset);
    central += name;
  }
  const uint32_t cd_offset = static_cast<uint32_t>(out.size());
  out += central;
  u32(out, 0x06054b50); u16(out, 0); u16(out, 0); u16(out, entries.size()); u16(out, entries.size());
  u32(out, central.size()); u32(out, cd_offset); u16(out, 0);
  return out;
}

}  // namespace fuzz
