#include "text/token_cache.h"

#include <gtest/gtest.h>

#include <fstream>

#include "test_support.h"
#include "util/atomic_file.h"

namespace grassaudit {
namespace {

TokenCacheEntry sample() {
  return {{{1, 2, 3}, {}, {-5, 2147483647}}, {"<eos>", "", "caf\xc3\xa9"}};
}

void expect_same(const TokenCacheEntry& a, const TokenCacheEntry& b) {
  EXPECT_EQ(a.arrays, b.arrays);
  EXPECT_EQ(a.strings, b.strings);
}

TEST(TokenCache, RoundTripCreatesFolder) {
  testing::TempDir t;
  const std::string path = token_cache_path(t.file("deep/cache"), "wikitext2-word", 0xabcdefull);
  EXPECT_EQ(path, t.file("deep/cache/wikitext2-word-0000000000abcdef.tok"));
  write_token_cache(path, 0xabcdef, sample());
  auto back = read_token_cache(path, 0xabcdef);
  ASSERT_TRUE(back.has_value());
  expect_same(*back, sample());
}

TEST(TokenCache, MissWhenAbsentOrOtherKey) {
  testing::TempDir t;
  std::string why;
  EXPECT_FALSE(read_token_cache(t.file("x.tok"), 1, &why).has_value());
  EXPECT_EQ(why, "absent");
  write_token_cache(t.file("x.tok"), 1, sample());
  EXPECT_FALSE(read_token_cache(t.file("x.tok"), 2, &why).has_value());
  EXPECT_EQ(why, "key mismatch");
}

TEST(TokenCache, EveryTruncationIsDetected) {
  testing::TempDir t;
  write_token_cache(t.file("x.tok"), 9, sample());
  const std::string bytes = read_file(t.file("x.tok"));
  for (size_t n = 0; n < bytes.size(); ++n) {
    t.write("cut.tok", bytes.substr(0, n));
    EXPECT_FALSE(read_token_cache(t.file("cut.tok"), 9).has_value()) << "length " << n;
  }
  t.write("long.tok", bytes + "x");
  EXPECT_FALSE(read_token_cache(t.file("long.tok"), 9).has_value());
}

TEST(TokenCache, EveryFlippedByteIsDetected) {
  testing::TempDir t;
  write_token_cache(t.file("x.tok"), 9, sample());
  const std::string bytes = read_file(t.file("x.tok"));
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string bad = bytes;
    bad[i] = static_cast<char>(bad[i] ^ 0x40);
    t.write("bad.tok", bad);
    EXPECT_FALSE(read_token_cache(t.file("bad.tok"), 9).has_value()) << "byte " << i;
  }
}

}  // namespace
}  // namespace grassaudit
