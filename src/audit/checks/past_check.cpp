// The past horizon (causality_audit.h): the largest D with y_t depending on x_{t-D}, by replacing
// the inputs BEFORE each cut (the mirror image of the future tables). Measured when asked for,
// and always when the contract declares a window, whose violation it decides.
#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "audit/checks/check.h"
#include "audit/checks/check_outputs.h"
#include "audit/checks/decide.h"
#include "audit/checks/json_fields.h"
#include "audit/checks/routing_search.h"

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
  bool carries_horizon(ViolationKind k) const override { return k == ViolationKind::kWindow; }

  // Sets r.past_horizon and puts PastEvidence (where it was seen). Without a window the evidence
  // is never reported (it belongs to a window violation), so a probe that cannot raise the
  // horizon already found is skipped (`prune`); with one, every table is decided whole.
  //
  // Once a whole table has moved nothing (without a window), the tables after it are screened
  // first, every cut, with the first trial's rows. As with the future tables' screen it is all or
  // nothing: the first of them whose screen moves ends the screened attempt, and every table from
  // the first screened one on is decided again without it, in the same order, so a model whose
  // past moves anywhere after the first table gets the horizon it gets without the screen. Only a
  // dependence that no screened table's first trial shows is missed (src/audit/README.md).
  void run(AuditRun& run) override {
    const CoupledModes* coupled = run.outputs.get<CoupledModes>();
    const Prober::IsolatedRows isolated(run.prober, coupled ? coupled->modes : std::vector<AuditMode>{});
    const bool prune = !run.opt.window;
    std::vector<std::pair<int64_t, AuditMode>> tables;  // schedule order: lengths outer, modes inner
    const FutureHorizon* future = run.outputs.get<FutureHorizon>();  // the lengths the future tables ran at
    for (int64_t len : future ? future->lens : run.lens)
      for (AuditMode mode : run.probed) tables.emplace_back(len, mode);
    Evidence best;
    int64_t horizon = 0;
    bool moved = false;       // whether any past cell probed so far moved at all
    bool screening = prune && screen_wanted(run.opt);
    Pass scratch32, scratch64;  // the re-runs' tables, read once each
    for (size_t i = 0; i < tables.size(); ++i) {
      const auto [len, mode] = tables[i];
      // A table whose longest distance, len - 1, is below the horizon found can change neither
      // the horizon nor its evidence (which goes to a larger effect only at the same distance);
      // one that reaches only as far as the horizon can change just the evidence.
      if (len - 1 < horizon || (prune && len - 1 <= horizon)) continue;
      const std::optional<int64_t> known = prune ? std::optional<int64_t>(horizon) : std::nullopt;
      if (screening && i > 0 && !moved) {
        // Nothing moved so far (horizon 0, no evidence): the tables from here on screened, all
        // or nothing; when one moves, they are decided again without the screen from here.
        screening = false;
        std::vector<std::pair<AuditMode, int64_t>> rest;
        for (size_t k = i; k < tables.size(); ++k) rest.emplace_back(tables[k].second, tables[k].first);
        if (screen_all_zero(run.prec, run.prober, rest, Side::kPast, scratch32)) break;
      }
      bool f64 = false, table_moved = true;
      const TableVerdict v = decide_table(run, mode, len, known, f64, table_moved, scratch32, scratch64);
      moved = moved || table_moved;
      if (v.horizon > horizon || (v.horizon == horizon && horizon > 0 && v.effect > best.effect)) {
        horizon = v.horizon;
        best = evidence(mode, len, v, decided_in(run.prec, f64), fmt::format("inputs before {} were replaced (", v.c));
      }
    }
    if (routing_seen(run, Side::kPast)) search_routing(run, horizon, best);
    run.r.past_horizon = horizon;
    run.outputs.put(PastEvidence{best});
  }

  void judge(const AuditRun& run, std::vector<Violation>& out) const override {
    const AuditResult& r = run.r;
    const PastEvidence* where = run.outputs.get<PastEvidence>();
    if (r.window && r.past_horizon && *r.past_horizon > *r.window - 1)
      out.push_back({ViolationKind::kWindow, *r.past_horizon, *r.window - 1, where ? where->evidence : Evidence{}});
    else if (r.window && r.past_horizon_lower_bound)
      out.push_back({ViolationKind::kUnproven, r.past_horizon.value_or(0), *r.window - 1,
                     unproven_evidence(r, "past horizon")});
  }

  void write_json(const AuditResult& r, nlohmann::json& j) const override {
    j["past_horizon"] = opt_json(r.past_horizon);
    j["past_horizon_bound"] = r.past_horizon ? nlohmann::json(r.past_horizon_lower_bound ? "lower" : "exact") : nullptr;
  }
  void write_output_json(const AuditResult& r, nlohmann::json& j) const override {
    j["past_horizon"] = opt_json(r.past_horizon);
  }
  std::string status(const AuditResult& r) const override {
    return "past horizon: " + (r.past_horizon ? std::to_string(*r.past_horizon) : std::string("not measured"));
  }

  std::string headline(const Violation& v, const AuditResult&) const override {
    if (v.kind != ViolationKind::kWindow) return "";
    return fmt::format("WINDOW EXCEEDED (reads {} back, the window allows {})", v.horizon, v.allowed);
  }

  std::vector<Expectation> expectations() const override {
    return {{"past_horizon", [](const AuditResult& r) { return opt_json(r.past_horizon); }}};
  }

 private:
  // Routing seen: each probed mode searched at the main length beyond the horizon so far, in
  // float64 where the target runs there; a farther cell above the horizon threshold raises the
  // horizon and becomes its evidence.
  static void search_routing(AuditRun& run, int64_t& horizon, Evidence& best) {
    search_probed_modes(
        run, Side::kPast, [&](AuditMode) { return horizon; },
        [&](AuditMode mode, const EffectTable& found, const InPrecision& in, double threshold) {
          const TableVerdict v = grassaudit::judge(found, threshold, Side::kPast);
          if (v.horizon <= horizon) return;
          horizon = v.horizon;
          best = evidence(mode, run.L, v, decided_in(run.prec, in.float64()),
                          fmt::format("x_{} alone was replaced (routing search, ", v.c - 1));
        });
  }

  // The window's evidence: the strongest cell `v` at the horizon, seen when `what` ("inputs
  // before c were replaced (") in `mode` at `len`, decided in `precision`.
  static Evidence evidence(AuditMode mode, int64_t len, const TableVerdict& v, std::string precision,
                           const std::string& what) {
    Evidence e;
    e.mode = mode_name(mode);
    e.seq_len = len;
    e.position = v.t;
    e.cut = v.c;
    e.effect = v.effect;
    e.precision = std::move(precision);
    e.text = fmt::format("y_{} moved by {:.3g} (relative) when {}{} mode, L={}, {}): it reads x_{}", v.t, v.effect,
                         what, e.mode, len, e.precision, v.t - v.horizon);
    return e;
  }

  // One (mode, length) table, decided, in two parts of the same passes (Prober::TableParts).
  // First the part holding cut 1, judged on cut 1 alone: the only cut that reaches distance
  // len - 1 (y_{len-1} reading x_0). When it does, the full table's horizon is len - 1 and its
  // strongest cell at that distance is this very cell, so the other cuts could add nothing: a
  // model with an unbounded past costs one pass here instead of L - 1 cuts. A model that reads
  // its past at all moves at cut 1 (y_D reads x_0 at its distance D); one that moved nothing in
  // the first part (it reads only the present and the future) gets the screen: trial 0's rows of
  // every cut after it, and the whole table only where they moved, as the future tables' screen
  // (src/audit/README.md says what a screen can miss). Otherwise the rest of the table, and the
  // decision on all of it.
  // `known` (pruning): the horizon other tables proved; cells at or within it can raise nothing.
  // `moved`: set to whether any cell probed in the target's own dtype moved at all.
  static TableVerdict decide_table(AuditRun& run, AuditMode mode, int64_t len, std::optional<int64_t> known,
                                   bool& f64, bool& moved, Pass& scratch32, Pass& scratch64) {
    PrecisionSwitch& prec = run.prec;
    moved = true;
    const bool own64 = prec.own_dtype() == at::kDouble;  // a float64 target: its floor decides
    if (own64) prec.establish();
    const double certain = own64 ? prec.horizon_threshold() : kPastCertain32;
    Prober::TableParts parts;
    const auto first_part = [](const EffectTable&, int64_t next_cut) { return next_cut > 1; };
    const EffectTable first = rerun_own(run, mode, len, scratch32, first_part, parts);
    EffectTable cut1 = EffectTable::zeros(len, first.dtype);
    for (int64_t t = 1; t < len; ++t) cut1.raise(t, 1, first.at(t, 1));
    const TableVerdict v1 = decide(run, mode, len, cut1, known, certain, own64, f64, scratch64);
    if (v1.horizon == len - 1) return v1;
    if (parts.next_cut >= len) {  // the first part was the whole table
      moved = first.max() > 0.0;
      return decide(run, mode, len, first, known, certain, own64, f64, scratch64);
    }
    if (screen_wanted(run.opt) && first.max() == 0.0 &&
        screen_all_zero(prec, run.prober, {{mode, len}}, Side::kPast, scratch32, parts.next_cut)) {
      moved = false;
      return v1;
    }
    // Cuts in ascending order: cut c reaches at most distance len - c, so once that is below the
    // horizon the cells already probed prove, no later cut can raise the horizon or hold a cell at
    // it (the evidence), nor a small cell beyond it (what the float64 re-run would look at);
    // pruning, once it is at most the larger of that and `known`.
    const Prober::TableDone beyond_reach = [&](const EffectTable& so_far, int64_t next_cut) {
      const int64_t h = grassaudit::judge(so_far, certain, Side::kPast).horizon;
      return known ? len - next_cut <= std::max(h, *known) : len - next_cut < h;
    };
    const EffectTable t32 = rerun_own(run, mode, len, scratch32, beyond_reach, parts);
    return decide(run, mode, len, t32, known, certain, own64, f64, scratch64);
  }

  // The next part of a past table (every cut from parts.next_cut until `done`), in the target's own dtype.
  static EffectTable rerun_own(AuditRun& run, AuditMode mode, int64_t len, Pass& scratch32,
                               const Prober::TableDone& done, Prober::TableParts& parts) {
    const InPrecision own = run.prec.in_own();
    return run.prober.rerun_cuts(own, mode, len, {}, scratch32, Side::kPast, done, &parts);
  }

  // The float32 (own dtype) cells `t32` of a table decided (own64: a float64 target, whose own
  // cells decide against its floor; f64: set to whether float64 decided): cells of `certain` or more are real;
  // cuts whose only evidence beyond that horizon is small are re-run in float64 (or judged
  // against the float32 floor threshold when float64 is unavailable). Pruning (`known`), the
  // re-run covers only small cells beyond max(that horizon, known) and stops once no cut left
  // holds one beyond the horizon it has proven.
  static TableVerdict decide(AuditRun& run, AuditMode mode, int64_t len, const EffectTable& t32,
                             std::optional<int64_t> known, double certain, bool own64, bool& f64, Pass& scratch64) {
    PrecisionSwitch& prec = run.prec;
    const TableVerdict v = grassaudit::judge(t32, certain, Side::kPast);
    f64 = own64;
    if (own64) return v;
    // The cuts to re-run and, per cut, its farthest small cell beyond what is proven.
    const int64_t proven = std::max(v.horizon, known.value_or(-1));
    std::vector<int64_t> cuts, farthest;
    for (int64_t c = 1; c < len; ++c) {
      int64_t far = 0;
      for (int64_t t = c; t < len; ++t) {
        const double e = t32.at(t, c);
        if (e > 0 && e < kPastCertain32 && cut_distance(Side::kPast, t, c) > proven)
          far = std::max(far, cut_distance(Side::kPast, t, c));
      }
      if (far > 0) {
        cuts.push_back(c);
        farthest.push_back(far);
      }
    }
    if (cuts.empty()) return v;
    // farthest_from[i]: the farthest small cell of cuts[i] and every cut after it.
    std::vector<int64_t> farthest_from(farthest.size() + 1, 0);
    for (size_t i = farthest.size(); i-- > 0;) farthest_from[i] = std::max(farthest[i], farthest_from[i + 1]);
    const auto d = decide_screened<EffectTable>(prec, t32, true, ThresholdKind::kHorizon, [&](const InPrecision& in) {
      Prober::TableDone nothing_beyond;
      if (known)
        nothing_beyond = [&](const EffectTable& so_far, int64_t next_cut) {
          const auto i = static_cast<size_t>(std::lower_bound(cuts.begin(), cuts.end(), next_cut) - cuts.begin());
          const int64_t h = grassaudit::judge(so_far, prec.horizon_threshold(), Side::kPast).horizon;
          return farthest_from[i] <= std::max(proven, h);
        };
      return run.prober.rerun_cuts(in, mode, len, cuts, scratch64, Side::kPast, nothing_beyond);
    });
    f64 = d.float64;
    const TableVerdict small = grassaudit::judge(d.value, d.threshold, Side::kPast);
    return small.horizon > v.horizon ? small : v;
  }
};

}  // namespace

std::unique_ptr<Check> make_past_check() { return std::make_unique<PastCheck>(); }

}  // namespace grassaudit
