#pragma once
// Contiguous language-model blocks: the token stream cut into non-overlapping windows of
// length L, each paired with the same window shifted one token ahead.
#include <cstdint>
#include <vector>

namespace grassaudit {

struct LmBlocks {
  int64_t num_blocks = 0;
  int64_t block_len = 0;
  // Row-major [num_blocks, block_len]: inputs[i*L + j] = ids[i*L + j],
  // targets[i*L + j] = ids[i*L + j + 1].
  std::vector<int32_t> inputs;
  std::vector<int32_t> targets;
};

// Shapes: ids [n] -> inputs, targets [floor((n-1)/L), L] (0 blocks if n < L+1). The tail
// that cannot form a full block with its target is dropped. Throws InputError if L <= 0
// (block length comes from a user flag).
LmBlocks make_lm_blocks(const std::vector<int32_t>& ids, int64_t block_len);

}  // namespace grassaudit
