#include "util/hash.h"

namespace grassaudit {

void Fnv1a64::update(const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t h = state_;
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  state_ = h;
}

void Fnv1a64::update_u64(uint64_t v) {
  unsigned char b[8];
  for (int i = 0; i < 8; ++i) b[i] = static_cast<unsigned char>(v >> (8 * i));
  update(b, 8);
}

uint64_t fnv1a64(std::string_view bytes) {
  Fnv1a64 h;
  h.update(bytes);
  return h.digest();
}

}  // namespace grassaudit
