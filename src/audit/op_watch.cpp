#include "audit/op_watch.h"

#include <ATen/core/ivalue.h>
#include <ATen/record_function.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <optional>

namespace grassaudit {
namespace {

thread_local OpWatch* current_watch = nullptr;

// The selections, and which of their integer arguments is the axis: topk(self, k, dim) and
// kthvalue(self, k, dim) take it second, the others first. max and min select only with an axis
// (without one they return a value, no index).
struct Selection {
  const char* name;
  int dim_int;          // which integer argument is the axis
  bool needs_axis;      // no axis given: not a selection (max, min) rather than the whole tensor
};
constexpr Selection kSelections[] = {
    {"aten::topk", 1, false},    {"aten::kthvalue", 1, false}, {"aten::sort", 0, false},
    {"aten::argsort", 0, false}, {"aten::argmax", 0, false},   {"aten::argmin", 0, false},
    {"aten::max", 0, true},      {"aten::min", 0, true},       {"aten::median", 0, true},
    {"aten::mode", 0, false},    {"aten::msort", -1, false},   {"aten::nanmedian", 0, true},
};

// A gather or scatter along an axis takes its indices as a tensor: computed from the inputs when
// its batch rows differ (positions alone give every row the same indices, or one row broadcast).
// Only a contiguous CPU int64 index is read: a copy would run an op inside the observer.
bool rows_differ(const at::Tensor& index) {
  if (!index.defined() || index.dim() < 1 || index.size(0) < 2 || index.scalar_type() != at::kLong ||
      !index.device().is_cpu() || !index.is_contiguous())
    return false;
  const int64_t rows = index.size(0), per_row = index.numel() / rows;
  const int64_t* p = index.data_ptr<int64_t>();
  for (int64_t r = 1; r < rows; ++r)
    if (!std::equal(p, p + per_row, p + r * per_row)) return true;
  return false;
}

// The gathers and scatters, and which input is their index: gather(self, dim, index),
// scatter*(self, dim, index, ...), take_along_dim(self, indices, dim).
struct Indexed {
  const char* name;
  size_t index_input;
};
constexpr Indexed kIndexed[] = {{"aten::gather", 2},         {"aten::scatter", 2},         {"aten::scatter_add", 2},
                                {"aten::scatter_reduce", 2}, {"aten::take_along_dim", 1}};

}  // namespace

struct OpWatchObserver {
  static std::unique_ptr<at::ObserverContext> on_op(const at::RecordFunction& fn) {
    if (current_watch) seen(*current_watch, fn.name(), fn.inputs());
    return nullptr;
  }
  static void seen(OpWatch& w, const char* name, c10::ArrayRef<const c10::IValue> inputs);
};

OpWatch::OpWatch(int64_t L) : L_(L) {
  current_watch = this;
  handle_ = at::addThreadLocalCallback(at::RecordFunctionCallback(&OpWatchObserver::on_op).needsInputs(true));
}

OpWatch::~OpWatch() {
  at::removeCallback(handle_);
  current_watch = nullptr;
}

void OpWatchObserver::seen(OpWatch& w, const char* name, c10::ArrayRef<const c10::IValue> inputs) {
  const size_t n = inputs.size();
  const int64_t L = w.L_;
  if (n == 0 || !inputs[0].isTensor()) return;
  const bool one_hot = std::strcmp(name, "aten::one_hot") == 0;
  const bool cumsum = std::strcmp(name, "aten::cumsum") == 0;
  const Selection* sel = nullptr;
  for (const auto& s : kSelections)
    if (std::strcmp(name, s.name) == 0) sel = &s;
  const Indexed* indexed = nullptr;
  for (const auto& g : kIndexed)
    if (std::strcmp(name, g.name) == 0) indexed = &g;
  if (!sel && !cumsum && !one_hot && !indexed) return;
  const at::Tensor& self = inputs[0].toTensor();
  if (!self.defined()) return;
  std::vector<int64_t> ints;
  for (size_t i = 1; i < n; ++i)
    if (inputs[i].isInt()) ints.push_back(inputs[i].toInt());
  const int64_t rank = self.dim();
  auto axis = [&](int which) -> std::optional<int64_t> {
    if (which < 0) return rank > 0 ? std::optional<int64_t>(0) : std::nullopt;  // msort: the first axis
    if (static_cast<size_t>(which) >= ints.size()) return std::nullopt;
    int64_t d = ints[static_cast<size_t>(which)];
    if (d < 0) d += rank;
    if (d < 0 || d >= std::max<int64_t>(rank, 1)) return std::nullopt;
    return d;
  };
  DiscreteOp op{name, -1, self.sizes().vec(), ""};
  if (one_hot) {
    w.index_made_ = true;
    return;
  }
  if (indexed) {
    const auto d = axis(0);
    if (!d || rank == 0 || self.size(*d) != L || n <= indexed->index_input || !inputs[indexed->index_input].isTensor() ||
        !rows_differ(inputs[indexed->index_input].toTensor()))
      return;
    op.dim = *d;
    op.why = "indices computed from the inputs";
  } else if (cumsum) {
    const auto d = axis(0);
    if (!w.index_made_ || !d || rank == 0 || self.size(*d) != L) return;
    op.dim = *d;
    op.why = "after an argmax or one_hot: a queue along time";
  } else {
    if (std::strcmp(name, "aten::argmax") == 0 || std::strcmp(name, "aten::argmin") == 0) w.index_made_ = true;
    const auto d = axis(sel->dim_int);
    if (!d && sel->needs_axis) return;
    if (d) {
      if (rank == 0 || self.size(*d) != L) return;
      op.dim = *d;
    } else if (std::find(op.shape.begin(), op.shape.end(), L) == op.shape.end()) {
      return;  // the whole tensor, but it has no time axis
    }
  }
  for (const auto& o : w.ops_)
    if (o.op == op.op && o.dim == op.dim && o.shape == op.shape) return;
  w.ops_.push_back(std::move(op));
}

std::string describe(const DiscreteOp& op) {
  std::string s = op.dim >= 0 ? fmt::format("{} over dim {} of [{}]", op.op, op.dim, fmt::join(op.shape, ", "))
                              : fmt::format("{} over the whole [{}]", op.op, fmt::join(op.shape, ", "));
  return op.why.empty() ? s : s + " (" + op.why + ")";
}

}  // namespace grassaudit
