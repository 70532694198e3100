#include "util/parse_number.h"

#include <gtest/gtest.h>

namespace grassaudit {

TEST(ParseNumber, WholeTextOnly) {
  EXPECT_EQ(parse_whole_integer("42"), 42);
  EXPECT_EQ(parse_whole_integer("-7"), -7);
  EXPECT_EQ(parse_whole_integer(" 3"), 3);  // std::stoll's leading blanks
  EXPECT_FALSE(parse_whole_integer(""));
  EXPECT_FALSE(parse_whole_integer("4x"));
  EXPECT_FALSE(parse_whole_integer("1.5"));
  EXPECT_FALSE(parse_whole_integer("99999999999999999999"));  // out of range
  EXPECT_EQ(parse_whole_double("22.6"), 22.6);
  EXPECT_EQ(parse_whole_double("1e3"), 1000.0);
  EXPECT_FALSE(parse_whole_double(""));
  EXPECT_FALSE(parse_whole_double("22.6%"));
  EXPECT_FALSE(parse_whole_double("abc"));
}

}  // namespace grassaudit
