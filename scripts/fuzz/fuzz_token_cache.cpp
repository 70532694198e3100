// The token cache reader. Input byte 0 picks the mode:
//   even: the rest is the whole file (damaged headers, truncations: must be a miss);
//   odd:  the rest is a payload wrapped in a valid header with a correct checksum, so the
//         payload parser itself is exercised (a writer bug must still be a miss, not a crash).
// A hit must re-serialise to exactly the bytes read. Never an exception.
#include <cstring>
#include <string>

#include "fuzz_common.h"
#include "text/token_cache.h"
#include "util/atomic_file.h"
#include "util/hash.h"

namespace {
constexpr uint64_t kKey = 0x1234567890abcdefull;

// The header of a valid file (magic, version, reserved, key); payload size and checksum follow.
const std::string& header_prefix() {
  static const std::string prefix = [] {
    const std::string path = std::string("/tmp/grassaudit-fuzz-hdr-") + std::to_string(getpid()) + ".tok";
    grassaudit::write_token_cache(path, kKey, {});
    std::string bytes = grassaudit::read_file(path);
    std::remove(path.c_str());
    return bytes.substr(0, 24);
  }();
  return prefix;
}

void put_u64(std::string& s, uint64_t v) {
  for (int i = 0; i < 8; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string file;
  const std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  if (data[0] & 1) {
    file = header_prefix();
    put_u64(file, rest.size());
    put_u64(file, grassaudit::fnv1a64(rest));
    file.append(rest);
  } else {
    file.assign(rest);
  }
  const std::string& path = fuzz::write_scratch(reinterpret_cast<const uint8_t*>(file.data()), file.size(), ".tok");
  auto entry = grassaudit::read_token_cache(path, kKey);
  if (entry) {
    const std::string again = path + ".again";
    grassaudit::write_token_cache(again, kKey, *entry);
    if (grassaudit::read_file(again) != file) __builtin_trap();
    std::remove(again.c_str());
  }
  return 0;
}
