#pragma once
// Learning-rate schedule and data order: pure functions of (config, step / epoch), so a run
// resumed from a checkpoint reproduces them exactly.
#include <cstdint>
#include <vector>

namespace grassaudit {

// lr for optimizer step `step` (0-based) of `total_steps`: linear warmup from base/warmup up to
// base over the first `warmup` steps, then cosine decay from base to base*min_ratio at the last
// step (total_steps - 1). Steps past the end stay at the floor.
double lr_at(int64_t step, int64_t total_steps, int64_t warmup, double base, double min_ratio);

// A permutation of 0..n-1 for epoch `epoch`: Fisher-Yates driven by SplitMix64 seeded with
// (seed, epoch). Platform-independent (no std::shuffle / std distributions).
std::vector<int64_t> epoch_order(int64_t n, uint64_t seed, int64_t epoch);

}  // namespace grassaudit
