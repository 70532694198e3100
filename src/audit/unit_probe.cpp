#include "audit/unit_probe.h"

#include <ATen/ATen.h>

namespace grassaudit {

std::vector<int64_t> time_axes(const std::vector<int64_t>& at_L, const std::vector<int64_t>& at_L2, int64_t L,
                               int64_t L2) {
  std::vector<int64_t> axes;
  const bool second = L2 > 0 && at_L2.size() == at_L.size();
  if (L2 > 0 && !second) return axes;  // another rank at another length: no axis can be told
  for (size_t d = 1; d < at_L.size(); ++d)
    if (at_L[d] == L && (!second || at_L2[d] == L2)) axes.push_back(static_cast<int64_t>(d));
  return axes;
}

namespace {
// [R, 1, .., size_d at d, .., 1] positions along axis d compared with each row's cut: `at_or_after`
// true gives pos >= cut, else pos < cut. Broadcastable against t.
at::Tensor against_cut(const at::Tensor& t, int64_t d, const at::Tensor& cuts, bool at_or_after) {
  std::vector<int64_t> pos_shape(static_cast<size_t>(t.dim()), 1), cut_shape(static_cast<size_t>(t.dim()), 1);
  pos_shape[static_cast<size_t>(d)] = t.size(d);
  cut_shape[0] = t.size(0);
  const auto pos = at::arange(t.size(d), at::TensorOptions().dtype(at::kLong).device(t.device())).view(pos_shape);
  const auto cut = cuts.to(t.device()).view(cut_shape);
  return at_or_after ? pos.ge(cut) : pos.lt(cut);
}

// Whether every time index of an element lies before its row's cut (broadcastable against t).
at::Tensor all_before(const at::Tensor& t, const std::vector<int64_t>& axes, const at::Tensor& cuts) {
  at::Tensor before;
  for (int64_t d : axes) {
    const auto m = against_cut(t, d, cuts, false);
    before = before.defined() ? before.logical_and(m) : m;
  }
  return before;
}
}  // namespace

at::Tensor fed_at_cut(const at::Tensor& a, const at::Tensor& b, const std::vector<int64_t>& axes,
                      const at::Tensor& cuts) {
  if (axes.empty()) return a;
  return at::where(all_before(a, axes, cuts), a, b);
}

at::Tensor held_before_cut(const at::Tensor& y, const at::Tensor& y_base, const std::vector<int64_t>& axes,
                           const at::Tensor& cuts) {
  if (axes.empty()) return y;
  return at::where(all_before(y, axes, cuts), y_base, y);
}

at::Tensor effect_before_cut(const at::Tensor& y, const at::Tensor& y_base, const std::vector<int64_t>& axes,
                             const at::Tensor& cuts, int64_t L) {
  const int64_t R = y.size(0);
  if (axes.empty()) return at::zeros({R, L}, at::kDouble);
  const auto base = y_base.to(at::kDouble);
  auto diff = (y.to(at::kDouble) - base).abs();
  diff = at::where(all_before(diff, axes, cuts), diff, at::zeros_like(diff));
  diff = diff.movedim(axes.front(), 1).reshape({R, L, -1});  // [R, L, rest]
  const auto scale = base.abs().reshape({R, -1}).amax(1).clamp_min(1e-300);  // [R]
  return diff.amax(2).div(scale.view({R, 1})).cpu().contiguous();
}

at::Tensor rows_mixed(const at::Tensor& a, const at::Tensor& b, const at::Tensor& keep) {
  std::vector<int64_t> shape(static_cast<size_t>(a.dim()), 1);
  shape[0] = a.size(0);
  return at::where(keep.to(a.device()).view(shape), a, b).contiguous();
}

double effect_in_kept_rows(const at::Tensor& y, const at::Tensor& y_base, const at::Tensor& keep) {
  const int64_t R = y.size(0);
  const auto base = y_base.to(at::kDouble).reshape({R, -1});
  const auto diff = (y.to(at::kDouble).reshape({R, -1}) - base).abs().amax(1);  // [R]
  const auto scale = base.abs().amax(1).clamp_min(1e-300);
  const auto rel = at::where(keep.to(diff.device()), diff.div(scale), at::zeros_like(diff));
  return rel.numel() == 0 ? 0.0 : rel.max().item<double>();
}

}  // namespace grassaudit
