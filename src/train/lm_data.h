#pragma once
// WikiText-2 as the trainer sees it: token streams cut into contiguous blocks of L tokens
// (targets = inputs shifted by one, text/lm_blocks.h) and batches of block indices.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

#include "text/lm_blocks.h"

namespace grassaudit {

// The first `max_tokens` scored positions of a split (max_tokens + 1 ids, since the last
// target is one token further); max_tokens <= 0 keeps the whole split.
std::vector<int32_t> limit_tokens(const std::vector<int32_t>& ids, int64_t max_tokens);

// Rows `indices[0..n)` of `blocks` as int64 tensors (inputs, targets), each [n, L], on CPU.
std::pair<at::Tensor, at::Tensor> make_batch(const LmBlocks& blocks, const int64_t* indices, int64_t n);

// Rows first..first+n-1 (in order; evaluation).
std::pair<at::Tensor, at::Tensor> make_batch_range(const LmBlocks& blocks, int64_t first, int64_t n);

// Where tokenized corpora are cached: $GRASSAUDIT_CACHE if set, else "<folder of the running
// executable>/.cache" (build/.cache for build/grassaudit), else "" (no cache).
std::string default_cache_dir();

}  // namespace grassaudit
