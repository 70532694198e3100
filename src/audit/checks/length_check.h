#pragma once
// Internal to src/audit: the prefix lengths the length check runs.
#include <cstdint>
#include <vector>

namespace grassaudit {

// Every p in lo..L-1 up to 32 of them, else 32 spread evenly over lo..L-1 (both ends included);
// lo = max(2, shortest), the shortest length the model runs at.
std::vector<int64_t> prefix_schedule(int64_t L, int64_t shortest = 2);

}  // namespace grassaudit
