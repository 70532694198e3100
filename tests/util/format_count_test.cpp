#include "util/format_count.h"

#include <gtest/gtest.h>

#include <limits>

namespace grassaudit {

TEST(FormatCount, GroupsThousands) {
  EXPECT_EQ(format_count(0), "0");
  EXPECT_EQ(format_count(999), "999");
  EXPECT_EQ(format_count(1000), "1,000");
  EXPECT_EQ(format_count(217646), "217,646");
  EXPECT_EQ(format_count(2088628), "2,088,628");
  EXPECT_EQ(format_count(-1234), "-1,234");
  EXPECT_EQ(format_count(std::numeric_limits<int64_t>::min()), "-9,223,372,036,854,775,808");
}

}  // namespace grassaudit
