#include "train/schedule.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace grassaudit {

double lr_at(int64_t step, int64_t total_steps, int64_t warmup, double base, double min_ratio) {
  if (step < 0) step = 0;
  if (warmup > 0 && step < warmup) return base * static_cast<double>(step + 1) / static_cast<double>(warmup);
  const double floor = base * min_ratio;
  const int64_t decay_steps = total_steps - 1 - warmup;
  if (decay_steps <= 0) return base;  // no room to decay (runs shorter than the warmup)
  const double progress = std::min(1.0, static_cast<double>(step - warmup) / static_cast<double>(decay_steps));
  const double pi = std::acos(-1.0);
  return floor + (base - floor) * 0.5 * (1.0 + std::cos(pi * progress));
}

namespace {
uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
}  // namespace

std::vector<int64_t> epoch_order(int64_t n, uint64_t seed, int64_t epoch) {
  std::vector<int64_t> order(static_cast<size_t>(std::max<int64_t>(n, 0)));
  std::iota(order.begin(), order.end(), 0);
  uint64_t state = seed ^ (0xD1B54A32D192ED03ull * static_cast<uint64_t>(epoch + 1));
  for (int64_t i = n - 1; i > 0; --i) {
    // Unbiased bounded draw by rejection.
    const uint64_t bound = static_cast<uint64_t>(i + 1);
    const uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
    uint64_t r;
    do r = splitmix64(state);
    while (r >= limit);
    std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(r % bound)]);
  }
  return order;
}

}  // namespace grassaudit
