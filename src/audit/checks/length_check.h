#pragma once
// Internal to src/audit: the prefix lengths the length check runs.
#include <cstdint>
#include <vector>

namespace grassaudit {

// Every p in 2..L-1 up to 32 of them, else 32 spread evenly over 2..L-1 (both ends included).
std::vector<int64_t> prefix_schedule(int64_t L);

}  // namespace grassaudit
