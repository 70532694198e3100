#include "text/token_cache.h"

#include <sys/stat.h>

#include <cstdio>
#include <cstring>

#include "util/atomic_file.h"
#include "util/error.h"
#include "util/hash.h"
#include "util/make_dirs.h"

namespace grassaudit {
namespace {

constexpr char kMagic[8] = {'G', 'R', 'T', 'O', 'K', 'C', 'A', '\0'};
constexpr uint32_t kVersion = 1;
constexpr size_t kHeaderBytes = 40;

void put_u32(std::string& s, uint32_t v) {
  for (int i = 0; i < 4; ++i) s.push_back(static_cast<char>(v >> (8 * i)));
}
void put_u64(std::string& s, uint64_t v) {
  for (int i = 0; i < 8; ++i) s.push_back(static_cast<char>(v >> (8 * i)));
}

// Bounds-checked little-endian reader over the payload.
struct Reader {
  const unsigned char* p;
  size_t n;
  size_t pos = 0;
  bool ok = true;

  uint64_t get(int bytes) {
    if (!ok || n - pos < static_cast<size_t>(bytes)) {
      ok = false;
      return 0;
    }
    uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(p[pos + i]) << (8 * i);
    pos += static_cast<size_t>(bytes);
    return v;
  }
};

std::optional<TokenCacheEntry> miss(std::string* why, const char* reason) {
  if (why) *why = reason;
  return std::nullopt;
}

}  // namespace

std::string token_cache_path(const std::string& cache_dir, const std::string& stem,
                             uint64_t key) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(key));
  return cache_dir + "/" + stem + "-" + hex + ".tok";
}

void write_token_cache(const std::string& path, uint64_t key, const TokenCacheEntry& entry) {
  std::string payload;
  size_t ints = 0;
  for (const auto& a : entry.arrays) ints += a.size();
  payload.reserve(16 + 8 * entry.arrays.size() + 4 * ints);
  put_u64(payload, entry.arrays.size());
  for (const auto& a : entry.arrays) {
    put_u64(payload, a.size());
    for (int32_t v : a) put_u32(payload, static_cast<uint32_t>(v));
  }
  put_u64(payload, entry.strings.size());
  for (const auto& s : entry.strings) {
    put_u32(payload, static_cast<uint32_t>(s.size()));
    payload += s;
  }
  std::string file(kMagic, sizeof kMagic);
  put_u32(file, kVersion);
  put_u32(file, 0);
  put_u64(file, key);
  put_u64(file, payload.size());
  put_u64(file, fnv1a64(payload));
  file += payload;

  const size_t slash = path.find_last_of('/');
  if (slash != std::string::npos && slash > 0) make_dirs(path.substr(0, slash));
  write_file_atomic(path, file);
}

std::optional<TokenCacheEntry> read_token_cache(const std::string& path, uint64_t key,
                                                std::string* why) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return miss(why, "absent");
  if (!S_ISREG(st.st_mode)) return miss(why, "not a regular file");
  std::string bytes;
  try {
    bytes = read_file(path);
  } catch (const InputError&) {
    return miss(why, "unreadable");
  }
  if (bytes.size() < kHeaderBytes) return miss(why, "truncated header");
  if (std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) return miss(why, "bad magic");
  Reader h{reinterpret_cast<const unsigned char*>(bytes.data()), kHeaderBytes, 8};
  const uint64_t version = h.get(4);
  const uint64_t reserved = h.get(4);
  const uint64_t file_key = h.get(8);
  const uint64_t payload_bytes = h.get(8);
  const uint64_t checksum = h.get(8);
  if (version != kVersion) return miss(why, "other format version");
  if (reserved != 0) return miss(why, "bad header");
  if (file_key != key) return miss(why, "key mismatch");
  if (payload_bytes != bytes.size() - kHeaderBytes) return miss(why, "truncated or padded");
  std::string_view payload(bytes.data() + kHeaderBytes, bytes.size() - kHeaderBytes);
  if (fnv1a64(payload) != checksum) return miss(why, "checksum mismatch");

  // The checksum passed, so a failure below means a writer bug; still never trust it.
  Reader r{reinterpret_cast<const unsigned char*>(payload.data()), payload.size()};
  TokenCacheEntry entry;
  const uint64_t n_arrays = r.get(8);
  if (n_arrays > payload.size() / 8) return miss(why, "bad array count");
  for (uint64_t a = 0; a < n_arrays && r.ok; ++a) {
    const uint64_t count = r.get(8);
    if (count > (payload.size() - r.pos) / 4) return miss(why, "bad array length");
    std::vector<int32_t> ids(static_cast<size_t>(count));
    for (auto& v : ids) v = static_cast<int32_t>(static_cast<uint32_t>(r.get(4)));
    entry.arrays.push_back(std::move(ids));
  }
  const uint64_t n_strings = r.get(8);
  if (n_strings > payload.size() / 4) return miss(why, "bad string count");
  for (uint64_t s = 0; s < n_strings && r.ok; ++s) {
    const uint64_t len = r.get(4);
    if (!r.ok || len > payload.size() - r.pos) return miss(why, "bad string length");
    entry.strings.emplace_back(payload.substr(r.pos, static_cast<size_t>(len)));
    r.pos += static_cast<size_t>(len);
  }
  if (!r.ok || r.pos != payload.size()) return miss(why, "malformed payload");
  return entry;
}

}  // namespace grassaudit
