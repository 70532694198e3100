#pragma once
// SHA-256 (FIPS 180-4) for content identities (weights, cache keys). Blocks go through the CPU's
// SHA extensions where it has them (x86 SHA-NI: a model's ~50 MB of weights in a fraction of the
// portable loop's time), else the portable loop; both give the same digest, tested against the
// standard vectors and against each other in tests/util.
#include <cstddef>
#include <cstdint>
#include <string>

namespace grassaudit {

class Sha256 {
 public:
  // use_hardware = false forces the portable loop (the tests compare the two).
  explicit Sha256(bool use_hardware = true);
  void update(const void* data, size_t n);
  std::string hex_digest();  // finalises; call once

 private:
  void blocks(const uint8_t* p, size_t n);  // n whole 64-byte blocks
  uint32_t h_[8];
  uint8_t buf_[64];
  size_t buf_len_ = 0;
  uint64_t total_ = 0;
  bool hardware_;
};

std::string sha256_hex(const std::string& data);

// Whether this CPU has the SHA extensions Sha256 uses.
bool sha256_hardware_available();

}  // namespace grassaudit
