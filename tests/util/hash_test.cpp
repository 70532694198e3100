#include "util/hash.h"

#include <gtest/gtest.h>

namespace grassaudit {

TEST(Fnv1a64, KnownVectors) {
  // Reference values of 64-bit FNV-1a (from the FNV specification's test suite).
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(fnv1a64("foobar"), 0x85944171f73967e8ull);
}

TEST(Fnv1a64, IncrementalEqualsOneShot) {
  Fnv1a64 h;
  h.update("foo");
  h.update("bar");
  EXPECT_EQ(h.digest(), fnv1a64("foobar"));
}

TEST(Fnv1a64, LengthPrefixSeparatesFields) {
  Fnv1a64 a, b;
  a.update_u64(2); a.update("ab"); a.update_u64(1); a.update("c");
  b.update_u64(1); b.update("a"); b.update_u64(2); b.update("bc");
  EXPECT_NE(a.digest(), b.digest());
}

}  // namespace grassaudit
