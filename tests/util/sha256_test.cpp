#include "util/sha256.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace grassaudit {
namespace {

std::string digest(const std::string& data, bool hardware) {
  Sha256 h(hardware);
  h.update(data.data(), data.size());
  return h.hex_digest();
}

}  // namespace

// FIPS 180-4's examples (NIST CSRC "SHA256.pdf", "SHA256_2.pdf") and one million 'a's, through
// both block functions (the hardware one only where the CPU has it).
TEST(Sha256, StandardVectors) {
  const std::string million(1000000, 'a');
  const std::pair<std::string, std::string> vectors[] = {
      {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
      {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
      {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
       "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
      {million, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"}};
  for (bool hardware : {false, true}) {
    if (hardware && !sha256_hardware_available()) continue;
    for (const auto& [message, hex] : vectors)
      EXPECT_EQ(digest(message, hardware), hex) << (hardware ? "SHA extensions" : "portable") << ", "
                                                << message.size() << " bytes";
  }
  EXPECT_EQ(sha256_hex("abc"), vectors[1].second);
}

// Every length around the block and padding boundaries, fed in uneven pieces: the digest is that
// of the whole message fed at once by the portable loop.
TEST(Sha256, PiecesAndBothBlockFunctionsAgree) {
  std::mt19937 rng(7);
  std::string data(600, '\0');
  for (char& c : data) c = static_cast<char>(rng());
  for (size_t len = 0; len <= data.size(); len += len < 200 ? 1 : 37) {
    const std::string msg = data.substr(0, len);
    const std::string want = digest(msg, false);
    for (bool hardware : {false, true}) {
      Sha256 h(hardware);
      size_t at = 0, piece = 1;
      while (at < len) {
        const size_t take = std::min(piece, len - at);
        h.update(msg.data() + at, take);
        at += take;
        piece = piece * 3 % 131 + 1;
      }
      EXPECT_EQ(h.hex_digest(), want) << "length " << len << (hardware ? ", SHA extensions" : ", portable");
    }
  }
}

}  // namespace grassaudit
