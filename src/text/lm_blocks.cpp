#include "text/lm_blocks.h"

#include <string>

#include "util/error.h"

namespace grassaudit {

LmBlocks make_lm_blocks(const std::vector<int32_t>& ids, int64_t block_len) {
  if (block_len <= 0) {
    throw InputError("block length must be positive, got " + std::to_string(block_len));
  }
  LmBlocks b;
  b.block_len = block_len;
  const int64_t n = static_cast<int64_t>(ids.size());
  // Block i needs ids[i*L .. i*L+L] inclusive (its last target), i.e. i*L + L <= n - 1.
  b.num_blocks = n < 1 ? 0 : (n - 1) / block_len;
  const size_t total = static_cast<size_t>(b.num_blocks * block_len);
  if (total == 0) return b;  // also keeps ids.begin() + 1 in range for an empty stream
  b.inputs.assign(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(total));
  b.targets.assign(ids.begin() + 1, ids.begin() + 1 + static_cast<std::ptrdiff_t>(total));
  return b;
}

}  // namespace grassaudit
