#pragma once
// 64-bit FNV-1a: a small, dependency-free content hash for cache keys and checksums.
// Not cryptographic; collisions are only a concern against adversarial inputs.
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace grassaudit {

class Fnv1a64 {
 public:
  // Feeds `n` bytes; calls may be split anywhere (hash of a+b == update(a), update(b)).
  void update(const void* data, size_t n);
  void update(std::string_view bytes) { update(bytes.data(), bytes.size()); }
  // Feeds the 8 little-endian bytes of `v`; used to delimit variable-length fields so that
  // ("ab","c") and ("a","bc") hash differently.
  void update_u64(uint64_t v);
  uint64_t digest() const { return state_; }

 private:
  uint64_t state_ = 14695981039346656037ull;
};

// One-shot hash of `bytes`.
uint64_t fnv1a64(std::string_view bytes);

}  // namespace grassaudit
