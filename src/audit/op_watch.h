#pragma once
// Internal to src/audit: the discrete selections over the time axis that a forward runs, read
// from the ops as they run (LibTorch's RecordFunction observers), whatever runs them: a
// TorchScript graph, the torch.export and ONNX interpreters, a live Python module. A selection is
// a topk, sort, argsort, argmax, argmin, kthvalue, median or mode, or a max or min that returns
// indices, along an axis of the forward's length L; or a cumsum along such an axis after an
// argmax or one_hot in the same forward (a capacity queue: each token's place in its expert's
// queue); or a gather or scatter along such an axis whose indices are computed from the inputs
// (its batch rows differ). Gradients do not see through any of them, and a random replacement flips them only
// sometimes: the checks search beyond the horizon their tables found (checks/routing_search.h).
//
// "Along the time axis" is read from sizes: the selected axis has L elements. An axis that
// merely has L elements too is taken for time; that costs a search, never a fact.
#include <cstdint>
#include <string>
#include <vector>

#include "util/non_copyable.h"

namespace grassaudit {

struct DiscreteOp {
  std::string op;              // the operator's name, e.g. "aten::topk"
  int64_t dim = -1;            // the axis selected along (-1: the whole tensor, flattened)
  std::vector<int64_t> shape;  // the selected tensor's shape
  std::string why;             // "" or what made it a selection (the cumsum after an argmax)
};

// Records, while it lives, the selections over time of the forwards run on this thread at
// length L. One at a time per thread.
class OpWatch : NonCopyable {
 public:
  explicit OpWatch(int64_t L);
  ~OpWatch();

  // Distinct (op, dim, shape) in the order first seen.
  const std::vector<DiscreteOp>& ops() const { return ops_; }

  // The observer (a plain function: the callback can capture nothing) calls it with each op.
  friend struct OpWatchObserver;

 private:
  int64_t L_;
  uint64_t handle_ = 0;
  bool index_made_ = false;  // an argmax or one_hot ran: a later cumsum over time is a queue
  std::vector<DiscreteOp> ops_;
};

// "aten::topk over dim 1 of [32, 16, 4]" (and why, when there is a why).
std::string describe(const DiscreteOp& op);

}  // namespace grassaudit
