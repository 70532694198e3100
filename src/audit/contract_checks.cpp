#include "audit/contract_checks.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "util/error.h"

namespace grassaudit {

std::string dtype_name(at::ScalarType t) {
  return t == at::kDouble ? "float64" : t == at::kFloat ? "float32" : c10::toString(t);
}

namespace {
// The precision a re-run decided in, after prec.to_float64() said `f64`.
std::string decided_in(const PrecisionSwitch& prec, bool f64) {
  return f64 ? "float64" : dtype_name(prec.own());
}
}  // namespace

void check_batch(PrecisionSwitch& prec, Prober& prober, const std::vector<AuditMode>& modes, int64_t L,
                 AuditResult& r) {
  r.batch_coupled = false;
  for (AuditMode mode : modes) {
    prec.to_own();
    BatchEffect e;
    try {
      e = prober.batch_effect(mode, L);
    } catch (const NonFiniteOutput&) {
      throw;  // it ran at this batch size, and broke the output contract
    } catch (const InputError& err) {  // e.g. a model traced at batch 1
      r.batch_coupled.reset();
      r.notes.push_back(fmt::format("batch check skipped: the model does not run at the check's batch size ({})",
                                    err.what()));
      return;
    }
    double threshold = 0;  // exact zeros: nothing to decide
    bool f64 = prec.own() == at::kDouble;
    if (e.effect > 0) {
      const bool converts = !f64;
      f64 = prec.to_float64();
      if (f64 && converts) e = prober.batch_effect(mode, L);
      threshold = prec.threshold();
    }
    prec.to_own();
    if (!(e.effect > threshold)) continue;
    prober.isolate_rows(mode);
    if (*r.batch_coupled) continue;  // evidence from the first coupled mode
    r.batch_coupled = true;
    Evidence& ev = r.batch_evidence;
    ev.mode = mode_name(mode);
    ev.seq_len = L;
    ev.row = e.row;
    ev.position = e.position;
    ev.effect = e.effect;
    ev.precision = decided_in(prec, f64);
    ev.text = fmt::format(
        "row {} moved by {:.3g} (relative) at position {} when the other rows of its batch were replaced ({} mode, "
        "L={}, {}): rows of a batch mix",
        e.row, e.effect, e.position, ev.mode, L, ev.precision);
  }
  if (*r.batch_coupled)
    r.notes.push_back("batch-coupled: " + r.batch_evidence.text +
                      "; horizons of the coupled modes were measured one row per pass");
}

std::vector<int64_t> prefix_schedule(int64_t L) {
  std::vector<int64_t> out;
  const int64_t lo = 2, hi = L - 1, n = hi - lo + 1;
  if (n <= 0) return out;
  constexpr int64_t kMax = 32;
  if (n <= kMax) {
    for (int64_t p = lo; p <= hi; ++p) out.push_back(p);
    return out;
  }
  for (int64_t i = 0; i < kMax; ++i) {
    const int64_t p = lo + (i * (n - 1)) / (kMax - 1);
    if (out.empty() || out.back() != p) out.push_back(p);
  }
  return out;
}

void check_length(PrecisionSwitch& prec, Prober& prober, int64_t L, int64_t guard, AuditResult& r) {
  std::vector<int64_t> lens;
  for (int64_t p : prefix_schedule(L))
    if (p - guard > 0) lens.push_back(p);
  if (lens.empty()) {
    r.notes.push_back(fmt::format("length check skipped: with a future horizon / lookahead of {} no prefix of L={} "
                                  "has a position unaffected by what follows it",
                                  guard, L));
    return;
  }
  prec.to_own();
  auto first = prober.prefix_effects(L, lens, guard);
  std::vector<int64_t> failed, moved;
  std::string first_error;
  for (const auto& pe : first) {
    if (!pe.error.empty()) {
      failed.push_back(pe.prefix_len);
      if (first_error.empty()) first_error = pe.error;
    } else if (pe.effect > 0) {
      moved.push_back(pe.prefix_len);
    }
  }
  if (!failed.empty())
    r.notes.push_back(fmt::format("length check: the model does not run at prefix length(s) {} ({}); those were "
                                  "skipped",
                                  fmt::join(failed, ","), first_error));
  if (failed.size() == first.size()) return;  // nothing compared: not checked
  r.length_dependent = false;
  if (moved.empty()) return;
  const bool converts = prec.own() != at::kDouble;
  const bool f64 = prec.to_float64();
  std::vector<PrefixEffect> decisive = first;
  if (f64 && converts) decisive = prober.prefix_effects(L, moved, guard);
  prec.to_own();
  const double threshold = prec.threshold();
  const PrefixEffect* worst = nullptr;
  for (const auto& pe : decisive)
    if (pe.error.empty() && pe.effect > threshold && (!worst || pe.effect > worst->effect)) worst = &pe;
  if (!worst) return;
  r.length_dependent = true;
  Evidence& ev = r.length_evidence;
  ev.mode = "eval";
  ev.seq_len = L;
  ev.prefix_len = worst->prefix_len;
  ev.position = worst->position;
  ev.effect = worst->effect;
  ev.precision = decided_in(prec, f64);
  ev.text = fmt::format(
      "y_{} from the prefix of length {} alone differs by {:.3g} (relative) from y_{} of the full length {} ({}): "
      "outputs depend on how many inputs follow",
      worst->position, worst->prefix_len, worst->effect, worst->position, L, ev.precision);
}

Evidence measure_past_horizon(PrecisionSwitch& prec, Prober& prober, const std::vector<AuditMode>& modes,
                              const std::vector<int64_t>& lens, AuditResult& r) {
  Evidence best;
  int64_t horizon = 0;
  Pass scratch32, scratch64;
  // One (mode, length) table of the given cuts (empty: every cut), decided: float32 cells of
  // kPastCertain32 or more are real; cuts whose only evidence beyond that horizon is small are
  // re-run in float64 (or judged against the float32 floor threshold when float64 is unavailable).
  auto decide = [&](AuditMode mode, int64_t len, const std::vector<int64_t>& only, bool& f64) {
    prec.to_own();
    EffectTable t32 = prober.rerun_cuts(mode, len, only, scratch32, Side::kPast);
    f64 = prec.own() == at::kDouble && prec.to_float64();  // a float64 target: its floor decides
    TableVerdict v = judge(t32, f64 ? prec.horizon_threshold() : kPastCertain32, Side::kPast);
    if (f64) return v;
    std::vector<int64_t> cuts;
    for (int64_t c = 1; c < len; ++c)
      for (int64_t t = c; t < len; ++t) {
        const double e = t32.at(t, c);
        if (e > 0 && e < kPastCertain32 && cut_distance(Side::kPast, t, c) > v.horizon) {
          cuts.push_back(c);
          break;
        }
      }
    if (cuts.empty()) return v;
    TableVerdict small;
    if (prec.to_float64()) {
      f64 = true;
      small = judge(prober.rerun_cuts(mode, len, cuts, scratch64, Side::kPast), prec.horizon_threshold(), Side::kPast);
    } else {
      small = judge(t32, prec.horizon_threshold(), Side::kPast);
    }
    return small.horizon > v.horizon ? small : v;
  };
  for (int64_t len : lens) {
    // A length whose longest distance, len - 1, is below the horizon found can change neither
    // the horizon nor its evidence (which goes to a larger effect only at the same distance).
    if (len - 1 < horizon) continue;
    for (AuditMode mode : modes) {
      // Cut 1 alone first: the only cut that reaches distance len - 1 (y_{len-1} reading x_0).
      // When it does, the full table's horizon is len - 1 and its strongest cell at that
      // distance is this very cell (the same probe rows: rerun_cuts), so the other cuts could
      // add nothing: a model with an unbounded past costs one pass here instead of L - 1 cuts.
      bool f64 = false;
      TableVerdict v = decide(mode, len, {1}, f64);
      if (v.horizon != len - 1) v = decide(mode, len, {}, f64);
      if (v.horizon > horizon || (v.horizon == horizon && horizon > 0 && v.effect > best.effect)) {
        horizon = v.horizon;
        best = Evidence{};
        best.mode = mode_name(mode);
        best.seq_len = len;
        best.position = v.t;
        best.cut = v.c;
        best.effect = v.effect;
        best.precision = decided_in(prec, f64);
        best.text = fmt::format("y_{} moved by {:.3g} (relative) when inputs before {} were replaced ({} mode, L={}, "
                                "{}): it reads x_{}",
                                v.t, v.effect, v.c, best.mode, len, best.precision, v.t - horizon);
      }
    }
  }
  prec.to_own();
  r.past_horizon = horizon;
  return best;
}

void judge_contract(const Evidence& future_evidence, const Evidence& past_evidence, AuditResult& r) {
  r.violations.clear();
  if (r.leak_horizon > r.lookahead) r.violations.push_back({ViolationKind::kFuture, r.leak_horizon, r.lookahead, future_evidence});
  if (r.length_dependent.value_or(false)) r.violations.push_back({ViolationKind::kLength, 0, 0, r.length_evidence});
  if (r.batch_coupled.value_or(false)) r.violations.push_back({ViolationKind::kBatch, 0, 0, r.batch_evidence});
  if (r.window && r.past_horizon && *r.past_horizon > *r.window - 1)
    r.violations.push_back({ViolationKind::kWindow, *r.past_horizon, *r.window - 1, past_evidence});
  r.verdict = r.violations.empty() ? Verdict::kCausal : Verdict::kLeaky;
}

}  // namespace grassaudit
