#include "train/lm_data.h"

#include <ATen/ATen.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <cstring>

namespace grassaudit {

std::vector<int32_t> limit_tokens(const std::vector<int32_t>& ids, int64_t max_tokens) {
  if (max_tokens <= 0 || static_cast<int64_t>(ids.size()) <= max_tokens + 1) return ids;
  return std::vector<int32_t>(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(max_tokens + 1));
}

std::pair<at::Tensor, at::Tensor> make_batch(const LmBlocks& blocks, const int64_t* indices, int64_t n) {
  const int64_t L = blocks.block_len;
  auto x = at::empty({n, L}, at::kLong);
  auto y = at::empty({n, L}, at::kLong);
  int64_t* xp = x.data_ptr<int64_t>();
  int64_t* yp = y.data_ptr<int64_t>();
  for (int64_t r = 0; r < n; ++r) {
    const int64_t b = indices[r];
    const int32_t* xi = blocks.inputs.data() + b * L;
    const int32_t* yi = blocks.targets.data() + b * L;
    for (int64_t j = 0; j < L; ++j) {
      xp[r * L + j] = xi[j];
      yp[r * L + j] = yi[j];
    }
  }
  return {x, y};
}

std::pair<at::Tensor, at::Tensor> make_batch_range(const LmBlocks& blocks, int64_t first, int64_t n) {
  std::vector<int64_t> idx(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) idx[static_cast<size_t>(i)] = first + i;
  return make_batch(blocks, idx.data(), n);
}

std::string default_cache_dir() {
  if (const char* env = std::getenv("GRASSAUDIT_CACHE"); env && *env) return env;
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "";
  std::string exe(buf, static_cast<size_t>(n));
  auto slash = exe.rfind('/');
  if (slash == std::string::npos) return "";
  return exe.substr(0, slash) + "/.cache";
}

}  // namespace grassaudit
