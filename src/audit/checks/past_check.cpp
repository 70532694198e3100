// The past horizon (causality_audit.h): the largest D with y_t depending on x_{t-D}, by replacing
// the inputs BEFORE each cut (the mirror image of the future tables). Measured when asked for,
// and always when the contract declares a window, whose violation it decides.
#include <fmt/format.h>

#include "audit/checks/check.h"
#include "audit/checks/decide.h"
#include "audit/checks/json_fields.h"

namespace grassaudit {
namespace {

// Float32 cells of this size or more are real dependences: rounding cannot move an output by
// 1e-3 of its scale. Smaller non-zero cells beyond that horizon are re-run in float64.
constexpr double kPastCertain32 = 1e-3;

class PastCheck : public Check {
 public:
  const char* name() const override { return "past"; }
  bool wanted(const AuditRun& run) const override {
    return (run.opt.past_horizon || run.opt.window) && !run.settled();
  }

  // Sets r.past_horizon and run.past_evidence (where it was seen).
  void run(AuditRun& run) override {
    Evidence best;
    int64_t horizon = 0;
    Pass scratch32, scratch64;  // the re-runs' tables, read once each
    for (int64_t len : run.r.seq_lens) {
      // A length whose longest distance, len - 1, is below the horizon found can change neither
      // the horizon nor its evidence (which goes to a larger effect only at the same distance).
      if (len - 1 < horizon) continue;
      for (AuditMode mode : run.probed) {
        // Cut 1 alone first: the only cut that reaches distance len - 1 (y_{len-1} reading x_0).
        // When it does, the full table's horizon is len - 1 and its strongest cell at that
        // distance is this very cell (the same probe rows: rerun_cuts), so the other cuts could
        // add nothing: a model with an unbounded past costs one pass here instead of L - 1 cuts.
        bool f64 = false, cut1_moved = false;
        TableVerdict v = decide(run, mode, len, {1}, f64, scratch32, scratch64, &cut1_moved);
        // A model that reads its past at all moves at cut 1 (y_D reads x_0 at its distance D);
        // one that does not (it reads only the present and the future) gets the screen first:
        // trial 0's rows of every cut, and the whole table only where they moved, as the future
        // tables' screen (src/audit/README.md says what a screen can miss).
        if (v.horizon != len - 1 && !(run.opt.screen && !cut1_moved && screened_zero(run, mode, len, scratch32)))
          v = decide(run, mode, len, {}, f64, scratch32, scratch64);
        if (v.horizon > horizon || (v.horizon == horizon && horizon > 0 && v.effect > best.effect)) {
          horizon = v.horizon;
          best = Evidence{};
          best.mode = mode_name(mode);
          best.seq_len = len;
          best.position = v.t;
          best.cut = v.c;
          best.effect = v.effect;
          best.precision = decided_in(run.prec, f64);
          best.text = fmt::format("y_{} moved by {:.3g} (relative) when inputs before {} were replaced ({} mode, "
                                  "L={}, {}): it reads x_{}",
                                  v.t, v.effect, v.c, best.mode, len, best.precision, v.t - horizon);
        }
      }
    }
    run.prec.to_own();
    run.r.past_horizon = horizon;
    run.past_evidence = best;
  }

  void judge(const AuditRun& run, std::vector<Violation>& out) const override {
    const AuditResult& r = run.r;
    if (r.window && r.past_horizon && *r.past_horizon > *r.window - 1)
      out.push_back({ViolationKind::kWindow, *r.past_horizon, *r.window - 1, run.past_evidence});
  }

  void write_json(const AuditResult& r, nlohmann::json& j) const override { j["past_horizon"] = opt_json(r.past_horizon); }

  std::string headline(const Violation& v, const AuditResult&) const override {
    if (v.kind != ViolationKind::kWindow) return "";
    return fmt::format("WINDOW EXCEEDED (reads {} back, the window allows {})", v.horizon, v.allowed);
  }

  std::vector<Expectation> expectations() const override {
    return {{"past_horizon", [](const AuditResult& r) { return opt_json(r.past_horizon); }}};
  }

 private:
  // One (mode, length) table of the given cuts (empty: every cut), decided: float32 cells of
  // kPastCertain32 or more are real; cuts whose only evidence beyond that horizon is small are
  // re-run in float64 (or judged against the float32 floor threshold when float64 is unavailable).
  // Trial 0's rows of the (mode, len) past table, every cut, in the target's own dtype: true when
  // no output moved at all.
  static bool screened_zero(AuditRun& run, AuditMode mode, int64_t len, Pass& scratch) {
    run.prec.to_own();
    return run.prober.screen_table(mode, len, scratch, Side::kPast).max() == 0.0;
  }

  // `moved`: whether any cell of the float32 (own dtype) table is non-zero.
  static TableVerdict decide(AuditRun& run, AuditMode mode, int64_t len, const std::vector<int64_t>& only, bool& f64,
                             Pass& scratch32, Pass& scratch64, bool* moved = nullptr) {
    PrecisionSwitch& prec = run.prec;
    prec.to_own();
    f64 = prec.own() == at::kDouble && prec.to_float64();  // a float64 target: its floor decides
    const double certain = f64 ? prec.horizon_threshold() : kPastCertain32;
    // Cuts in ascending order: cut c reaches at most distance len - c, so once that is below the
    // horizon the cells already probed prove, no later cut can raise the horizon or hold a cell at
    // it (the evidence), nor a small cell beyond it (what the float64 re-run would look at).
    const Prober::TableDone beyond_reach = [&](const EffectTable& so_far, int64_t next_cut) {
      return len - next_cut < grassaudit::judge(so_far, certain, Side::kPast).horizon;
    };
    const EffectTable t32 =
        run.prober.rerun_cuts(mode, len, only, scratch32, Side::kPast, only.empty() ? beyond_reach : Prober::TableDone{});
    if (moved) *moved = t32.max() > 0.0;
    const TableVerdict v = grassaudit::judge(t32, certain, Side::kPast);
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
    const auto d = decide_screened<EffectTable>(prec, t32, true, ThresholdKind::kHorizon, [&] {
      return run.prober.rerun_cuts(mode, len, cuts, scratch64, Side::kPast);
    });
    f64 = d.float64;
    const TableVerdict small = grassaudit::judge(d.value, d.threshold, Side::kPast);
    return small.horizon > v.horizon ? small : v;
  }
};

}  // namespace

std::unique_ptr<Check> make_past_check() { return std::make_unique<PastCheck>(); }

}  // namespace grassaudit
