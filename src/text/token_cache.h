#pragma once
// On-disk cache of tokenizer output: a few int32 arrays (e.g. train/valid/test ids) and an
// optional list of strings (e.g. a built vocabulary), tied to a 64-bit key that hashes
// everything the output depends on. A file that is truncated, corrupt, from another format
// version or for another key is reported as a miss and never trusted.
//
// Format (little-endian):
//   header  : magic "GRTOKCA\0" (8) | version u32 | reserved u32 | key u64 |
//             payload_bytes u64 | payload_fnv1a64 u64            (40 bytes)
//   payload : n_arrays u64, then per array: count u64, count x int32;
//             n_strings u64, then per string: length u32, bytes.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace grassaudit {

struct TokenCacheEntry {
  std::vector<std::vector<int32_t>> arrays;
  std::vector<std::string> strings;
};

// "<cache_dir>/<stem>-<16 hex digits of key>.tok"
std::string token_cache_path(const std::string& cache_dir, const std::string& stem,
                             uint64_t key);

// Writes atomically (write_file_atomic), creating the cache folder if needed. InputError
// if it cannot be written.
void write_token_cache(const std::string& path, uint64_t key, const TokenCacheEntry& entry);

// The entry, or nullopt if the file is absent or fails any check; `why` (if given) gets the
// reason ("absent", "truncated", "checksum mismatch", ...).
std::optional<TokenCacheEntry> read_token_cache(const std::string& path, uint64_t key,
                                                std::string* why = nullptr);

}  // namespace grassaudit
