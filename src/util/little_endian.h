#pragma once
// The n-byte little-endian unsigned integer at p: the byte order of zip archives and pickles.
#include <cstdint>

namespace grassaudit {

inline uint64_t read_le(const unsigned char* p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace grassaudit
