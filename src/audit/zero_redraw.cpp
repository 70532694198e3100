#include "audit/zero_redraw.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/grad_mode.h>

#include <cmath>

#include "util/string_affix.h"

namespace grassaudit {

namespace {
bool exactly_zero(const at::Tensor& t) {
  return at::isFloatingType(t.scalar_type()) && t.numel() > 0 && !t.ne(0).any().item<bool>();
}
}  // namespace

std::vector<PlannedRedraw> plan_zero_redraws(const std::vector<std::pair<std::string, at::Tensor>>& params,
                                             uint64_t seed) {
  at::NoGradGuard no_grad;
  std::vector<bool> zero(params.size(), false);
  for (size_t i = 0; i < params.size(); ++i) zero[i] = exactly_zero(params[i].second);
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  std::vector<PlannedRedraw> out;
  for (size_t i = 0; i < params.size(); ++i) {
    const auto& [name, value] = params[i];
    if (!zero[i] || ends_with(name, "bias")) continue;
    // The siblings: the non-zero floating parameters under the closest enclosing module that has
    // any (an attention's other projections for its output projection, a block's layers for its
    // ReZero alpha), so the redrawn tensor is as large as what the model keeps beside it.
    double scale = 0;
    std::string prefix = name;
    while (!(scale > 0)) {
      const auto dot = prefix.rfind('.');
      prefix = dot == std::string::npos ? "" : prefix.substr(0, dot);
      double sum = 0;
      int64_t n = 0;
      for (size_t j = 0; j < params.size(); ++j) {
        if (zero[j] || !at::isFloatingType(params[j].second.scalar_type())) continue;
        if (!prefix.empty() && params[j].first.rfind(prefix + ".", 0) != 0) continue;
        sum += params[j].second.to(at::kDouble).pow(2).sum().item<double>();
        n += params[j].second.numel();
      }
      if (n > 0) scale = std::sqrt(sum / static_cast<double>(n));
      if (prefix.empty()) break;
    }
    if (!(scale > 0)) scale = 0.02;  // every parameter is zero: a usual initial scale
    PlannedRedraw r;
    r.drawn = at::randn(value.sizes(), gen, at::TensorOptions().dtype(at::kDouble)) * scale;
    r.record = RedrawnTensor{name, value.sizes().vec(), scale};
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace grassaudit
