#include "audit/effect_table.h"

namespace grassaudit {

TableVerdict judge(const EffectTable& tab, double threshold, Side side) {
  TableVerdict v;
  for (int64_t c = 1; c < tab.L; ++c) {
    const int64_t lo = side == Side::kFuture ? 0 : c, hi = side == Side::kFuture ? c : tab.L;
    for (int64_t t = lo; t < hi; ++t) {
      const double e = tab.at(t, c);
      if (!(e > threshold)) continue;
      const int64_t D = cut_distance(side, t, c);
      if (D > v.horizon || (D == v.horizon && e > v.effect)) {
        v.horizon = D;
        v.t = t;
        v.c = c;
        v.effect = e;
      }
      if (side == Side::kFuture && (!v.first_cut || c < *v.first_cut)) v.first_cut = c;
    }
  }
  return v;
}

}  // namespace grassaudit
