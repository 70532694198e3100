#include "util/scoped_value.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>

namespace grassaudit {

TEST(ScopedValue, SetsAndRestoresNested) {
  std::array<int64_t, 3> rows{0, 0, 0};
  {
    const ScopedValue<std::array<int64_t, 3>> outer(rows, {8, 2, 4});
    EXPECT_EQ(rows[1], 2);
    {
      const ScopedValue<std::array<int64_t, 3>> inner(rows, {8, 6, 2});
      EXPECT_EQ(rows[1], 6);
    }
    EXPECT_EQ(rows, (std::array<int64_t, 3>{8, 2, 4}));
  }
  EXPECT_EQ(rows, (std::array<int64_t, 3>{0, 0, 0}));
}

}  // namespace grassaudit
