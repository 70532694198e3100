#pragma once
// The effect tables the probes fill (audit/audit_prober.h) and the checks judge: how much each
// output moved when the inputs on one side of a cut were replaced.
#include <c10/core/ScalarType.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

namespace grassaudit {

// Which inputs a probe replaces at cut c (0-based): kFuture, x_c .. x_{L-1} (outputs t < c are
// compared); kPast, x_0 .. x_{c-1} (outputs t >= c are compared).
enum class Side { kFuture, kPast };

// effect[t * L + c]: relative change of y_t when the inputs of `side` at cut c are replaced
// (future: c > t; past: c <= t). One table per (mode, length) of a pass.
struct EffectTable {
  int64_t L = 0;
  std::vector<double> effect;
  // The precision its cells were measured in.
  at::ScalarType dtype = at::ScalarType::Undefined;
  // L x L cells, all zero, of a table measured in `dtype`.
  static EffectTable zeros(int64_t L, at::ScalarType dtype) {
    return EffectTable{L, std::vector<double>(static_cast<size_t>(L * L), 0.0), dtype};
  }
  double at(int64_t t, int64_t c) const { return effect[static_cast<size_t>(t * L + c)]; }
  double max() const { return effect.empty() ? 0.0 : *std::max_element(effect.begin(), effect.end()); }
  void raise(int64_t t, int64_t c, double v) {
    auto& e = effect[static_cast<size_t>(t * L + c)];
    e = std::max(e, v);
  }
};

// Distance between output t and the nearest replaced input at cut c.
inline int64_t cut_distance(Side side, int64_t t, int64_t c) { return side == Side::kFuture ? c - t : t - c + 1; }

// Largest distance D with a cell above `threshold` in one table, and where it was seen (the
// largest cell at that distance) -- the leak horizon (future side) or past horizon (past side).
struct TableVerdict {
  int64_t horizon = 0;
  std::optional<int64_t> first_cut;  // future side: the smallest cut with a cell above threshold
  int64_t t = -1, c = -1;            // the strongest cell at distance `horizon`
  double effect = 0;
};
TableVerdict judge(const EffectTable& tab, double threshold, Side side = Side::kFuture);

}  // namespace grassaudit
