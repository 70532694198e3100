#include "audit/direction_draws.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <exception>
#include <mutex>
#include <thread>

namespace grassaudit {

namespace {

// The least part worth a thread: below it the copy and the thread cost what they save.
constexpr int64_t kLeastSplit = int64_t(1) << 20;

void draw_range(std::vector<at::Tensor>& out, const std::vector<at::Tensor>& like, size_t from, size_t to,
                at::Generator& gen) {
  for (size_t i = from; i < to; ++i)
    out[i] = at::randn(like[i].sizes(), gen, like[i].options().device(at::kCPU).requires_grad(false));
}

// The 64-bit words at::randn takes from a CPU generator for n float64 values, where ATen's
// normal_fill draws them (n >= 16): one per value in blocks of 16, then the last block again
// when n is not a multiple of 16. Anything else: -1 (not predicted; no split there).
int64_t predicted_words(const at::Tensor& p) {
  const int64_t n = p.numel();
  if (p.scalar_type() != at::kDouble || n < 16) return -1;
  return n + (n % 16 != 0 ? 16 : 0);
}

}  // namespace

DirectionDraws draw_directions(at::Generator& gen, const std::vector<at::Tensor>& like, int64_t misprediction) {
  DirectionDraws result;
  std::vector<at::Tensor>& out = result.directions;
  out.resize(like.size());
  int64_t total = 0;
  for (const auto& p : like) total += p.numel();
  // The first part: whole tensors from the front, about half of all values, every one predicted.
  size_t split = 0;
  int64_t words = 0, first = 0;
  while (split < like.size() && 2 * first < total) {
    const int64_t w = predicted_words(like[split]);
    if (w < 0) break;
    words += w;
    first += like[split].numel();
    ++split;
  }
  if (split == like.size() || first < kLeastSplit || total - first < kLeastSplit) {
    draw_range(out, like, 0, like.size(), gen);
    return result;
  }
  words += misprediction;
  result.two_threads = true;
  at::Generator second = gen.clone();
  {
    auto* impl = at::check_generator<at::CPUGeneratorImpl>(second);
    std::lock_guard<std::mutex> lock(second.mutex());
    for (int64_t i = 0; i < words; ++i) impl->random64();
  }
  const at::Tensor second_start = second.get_state();
  std::exception_ptr failed;
  std::thread rest([&] {
    try {
      draw_range(out, like, split, like.size(), second);
    } catch (...) {
      failed = std::current_exception();
    }
  });
  try {
    draw_range(out, like, 0, split, gen);
  } catch (...) {
    rest.join();
    throw;
  }
  rest.join();
  if (!failed && at::equal(gen.get_state(), second_start)) {
    gen.set_state(second.get_state());
  } else {
    draw_range(out, like, split, like.size(), gen);  // the copy started elsewhere: the plain loop's values
    result.second_redrawn = true;
  }
  return result;
}

}  // namespace grassaudit
