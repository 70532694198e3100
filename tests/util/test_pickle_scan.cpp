// pickle_out_of_range: what LibTorch's unpickler would size from a damaged pickle is caught
// before it allocates; well-formed pickles (and opcodes the walk does not know) pass.
#include <gtest/gtest.h>

#include <string>

#include "util/pickle_scan.h"

using namespace grassaudit;

namespace {
std::string scan(const std::string& p) {
  return pickle_out_of_range(reinterpret_cast<const unsigned char*>(p.data()), p.size());
}
// PROTO 2, EMPTY_DICT, BINPUT 0, MARK, BINUNICODE "a", BINPUT 1, BININT1 3, SETITEMS, STOP
const std::string kGood = std::string("\x80\x02}q\x00(X\x01\x00\x00\x00" "aq\x01K\x03u.", 18);
}  // namespace

TEST(PickleScan, AWellFormedPickleAndItsMemoReadsPass) {
  EXPECT_EQ(scan(kGood), "");
  // BINGET 1 after the two puts, LONG_BINPUT 2 in order, MEMOIZE.
  std::string p = kGood.substr(0, kGood.size() - 1) + std::string("h\x01r\x02\x00\x00\x00\x94.", 9);
  EXPECT_EQ(scan(p), "");
  EXPECT_EQ(scan(std::string("\x80\x02V", 3)), "");  // an opcode the walk leaves to the unpickler
}

TEST(PickleScan, AFlippedByteThatMakesAHugeMemoIndexIsCaught) {
  // The case seen in a damaged checkpoint: MARK (0x28) flipped to LONG_BINPUT (0x72) reads the
  // next four bytes as index 0x2874104b.
  std::string p = kGood;
  p[5] = 'r';
  const std::string why = scan(p);
  EXPECT_NE(why.find("memo index"), std::string::npos) << why;
  EXPECT_NE(scan(std::string("\x80\x02h\x05.", 5)).find("never written"), std::string::npos);
}

TEST(PickleScan, LengthsPastTheEndAreCaught) {
  // BINUNICODE8 with a length of 2^40, and BINUNICODE with one past the end.
  EXPECT_NE(scan(std::string("\x80\x02\x8d\x00\x00\x00\x00\x00\x01\x00\x00.", 12)).find("runs past"),
            std::string::npos);
  EXPECT_NE(scan(std::string("\x80\x02X\x10\x00\x00\x00" "ab.", 10)).find("runs past"), std::string::npos);
  EXPECT_NE(scan(std::string("\x80\x02X\x10", 4)).find("truncated"), std::string::npos);
  EXPECT_NE(scan(std::string("\x80\x02}", 3)).find("no STOP"), std::string::npos);
}
