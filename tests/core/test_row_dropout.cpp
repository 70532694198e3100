// Row-sharded dropout (core/row_dropout.h) against its reference, at::dropout on the whole
// global batch: for every split of the batch into contiguous shards, each shard's output equals
// the corresponding rows of the one-process output bit for bit, and the generator ends in the
// same state (so the next step's masks agree too). Also dist::row_share's split.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include "core/distributed.h"
#include "core/row_dropout.h"

namespace grassaudit {
namespace {

at::Tensor generator_state() { return at::detail::getDefaultCPUGenerator().get_state(); }

// One "step" of a global batch x: [G, ...] split into `world` shards, each shard drawing from the
// same starting generator state (as every rank does).
void expect_shards_match(const at::Tensor& x, double p, int world) {
  const int64_t G = x.size(0);
  at::manual_seed(42);
  const at::Tensor want = at::dropout(x, p, /*train=*/true);
  const at::Tensor state_after = generator_state();
  for (int r = 0; r < world; ++r) {
    const dist::RowShare s = dist::row_share(G, r, world);
    if (s.count == 0) continue;
    at::manual_seed(42);
    at::Tensor got;
    {
      const DropoutRowsScope rows(G, s.begin, s.count);
      got = row_sharded_dropout(x.narrow(0, s.begin, s.count), p, /*train=*/true);
    }
    EXPECT_TRUE(at::equal(got, want.narrow(0, s.begin, s.count))) << "world " << world << " rank " << r;
    EXPECT_TRUE(at::equal(generator_state(), state_after)) << "world " << world << " rank " << r;
  }
}

TEST(RowDropout, ShardsEqualTheRowsOfOneProcessDropout) {
  at::manual_seed(1);
  const at::Tensor lm = at::randn({6, 16, 8});       // [B, L, d]
  const at::Tensor heads = at::randn({6 * 2, 5, 5});  // [B*H, L, L] (attention probabilities)
  for (int world : {1, 2, 3, 4, 6})
    for (double p : {0.1, 0.5}) {
      expect_shards_match(lm, p, world);
      expect_shards_match(heads, p, world);
    }
}

TEST(RowDropout, OutsideAScopeItIsAtDropoutAndEvalIsIdentity) {
  const at::Tensor x = at::randn({4, 3});
  at::manual_seed(7);
  const at::Tensor a = at::dropout(x, 0.3, true);
  at::manual_seed(7);
  const at::Tensor b = row_sharded_dropout(x, 0.3, true);
  EXPECT_TRUE(at::equal(a, b));
  const DropoutRowsScope rows(8, 4, 4);
  EXPECT_TRUE(at::equal(row_sharded_dropout(x, 0.3, /*train=*/false), x));
  EXPECT_TRUE(at::equal(row_sharded_dropout(x, 0.0, true), x));
  EXPECT_THROW(row_sharded_dropout(at::randn({3, 2}), 0.3, true), std::logic_error);  // 3 is not a multiple of 4
}

TEST(RowShare, ContiguousCoversEveryRowOnceRankZeroFirst) {
  for (int world = 1; world <= 5; ++world)
    for (int64_t rows = 0; rows <= 13; ++rows) {
      int64_t next = 0;
      for (int r = 0; r < world; ++r) {
        const dist::RowShare s = dist::row_share(rows, r, world);
        EXPECT_EQ(s.begin, next);
        EXPECT_GE(s.count, rows / world);
        EXPECT_LE(s.count, rows / world + 1);
        next += s.count;
      }
      EXPECT_EQ(next, rows);
      if (rows > 0) {
        EXPECT_GT(dist::row_share(rows, 0, world).count, 0);
      }
    }
  EXPECT_FALSE(dist::active());  // no env:// variables in a test: a world of one
  EXPECT_EQ(dist::world_size(), 1);
}

}  // namespace
}  // namespace grassaudit
