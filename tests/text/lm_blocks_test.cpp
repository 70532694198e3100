#include "text/lm_blocks.h"

#include <gtest/gtest.h>

#include <numeric>

#include "test_support.h"
#include "util/error.h"

namespace grassaudit {
namespace {

TEST(LmBlocks, TargetsAreInputsShiftedByOne) {
  std::vector<int32_t> ids(23);
  std::iota(ids.begin(), ids.end(), 100);
  LmBlocks b = make_lm_blocks(ids, 5);
  EXPECT_EQ(b.num_blocks, 4);  // (23 - 1) / 5: ids[20..22] cannot fill a block
  EXPECT_EQ(b.block_len, 5);
  ASSERT_EQ(b.inputs.size(), 20u);
  ASSERT_EQ(b.targets.size(), 20u);
  for (size_t i = 0; i < b.inputs.size(); ++i) {
    EXPECT_EQ(b.inputs[i], ids[i]);
    EXPECT_EQ(b.targets[i], ids[i + 1]);
  }
  EXPECT_EQ(b.inputs[5], 105);   // block 1 starts at ids[5]
  EXPECT_EQ(b.targets[19], 120); // last target of the last block
}

TEST(LmBlocks, ExactFitNeedsOneExtraTokenForTheLastTarget) {
  std::vector<int32_t> ids(10, 7);
  EXPECT_EQ(make_lm_blocks(ids, 5).num_blocks, 1);  // 10 tokens: block 2 lacks its target
  ids.push_back(7);
  EXPECT_EQ(make_lm_blocks(ids, 5).num_blocks, 2);
}

TEST(LmBlocks, TooShortOrEmptyGivesNoBlocks) {
  EXPECT_EQ(make_lm_blocks({}, 4).num_blocks, 0);
  EXPECT_EQ(make_lm_blocks({1, 2, 3, 4}, 4).num_blocks, 0);
  EXPECT_TRUE(make_lm_blocks({1, 2, 3, 4}, 4).targets.empty());
}

TEST(LmBlocks, NonPositiveLengthIsAnInputError) {
  EXPECT_INPUT_ERROR(make_lm_blocks({1, 2, 3}, 0), "block length must be positive");
  EXPECT_INPUT_ERROR(make_lm_blocks({1, 2, 3}, -4), "-4");
}

}  // namespace
}  // namespace grassaudit
