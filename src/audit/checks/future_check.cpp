// The future tables (causality_audit.h, method 1): for every (mode, length) of the schedule, the
// effect of replacing the inputs from each cut on on every earlier output, screened in float32
// and decided in float64. Their horizon is the audit's leak horizon.
#include <c10/core/ScalarType.h>
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>

#include "audit/checks/check.h"
#include "audit/checks/check_outputs.h"
#include "audit/checks/decide.h"
#include "audit/checks/future_tables.h"
#include "audit/checks/json_fields.h"
#include "audit/checks/routing_search.h"
#include "audit/precision_switch.h"

namespace grassaudit {

int64_t table_horizon(const DecidedTables& d, AuditMode mode, int64_t len) {
  const auto it = d.decisive.tables.find({mode, len});
  return it == d.decisive.tables.end() ? 0 : judge(it->second, d.threshold).horizon;
}

namespace {

using TableKey = std::pair<AuditMode, int64_t>;  // (mode, length)

// The float32 table `t32` of (mode, t32.L) decided: exact zeros stand; otherwise the float64
// re-run of the cuts that moved (its probes counted into d.decisive). Sets the threshold in `d`.
EffectTable decide_probed(PrecisionSwitch& prec, Prober& prober, AuditMode mode, const EffectTable& t32,
                          DecidedTables& d) {
  const double moved = t32.max();
  auto dec = decide_screened<EffectTable>(prec, t32, moved > 0, ThresholdKind::kHorizon, [&](const InPrecision& in) {
    return prober.rerun_nonzero(in, mode, t32, d.decisive);
  });
  if (moved > 0.0) d.threshold = dec.threshold;  // exact zeros: nothing to tell apart
  return dec.value;
}

// A mode audited but not probed (AuditRun::probed: train mode proven equal to eval mode) has
// the eval-mode table of each length, copied.
bool copied(AuditMode mode, const std::vector<AuditMode>& probed) {
  return std::find(probed.begin(), probed.end(), mode) == probed.end();
}
void copy_unprobed(DecidedTables& d, const std::vector<AuditMode>& probed) {
  for (int64_t len : d.lens_run)
    for (AuditMode mode : d.modes_run)
      if (copied(mode, probed)) d.decisive.tables[{mode, len}] = d.decisive.tables.at({AuditMode::kEval, len});
}

// Every table of the schedule, lengths outer and modes inner (eval first at every length: a
// proven-equal train table is a copy of it). With stop_when_leaky each table is decided before
// the next, so the schedule ends at the first proven leak. Without it every float32 table is
// probed first and the decisions follow: the target goes to float64 once, not once per table
// that moved (each switch a pass over the whole model's memory, both ways). Each table is the
// same rows from the same seeds in either order, so every table, and every fact read from them,
// is the same bits.
DecidedTables decide_schedule(PrecisionSwitch& prec, Prober& prober, const AuditOptions& opt,
                              const std::vector<int64_t>& lens, const std::vector<AuditMode>& modes,
                              const std::vector<AuditMode>& probed) {
  DecidedTables d;
  d.lens_planned = lens;
  d.modes_planned = modes;
  const bool each = opt.stop_when_leaky;
  std::vector<std::pair<TableKey, EffectTable>> undecided;  // without stop_when_leaky: decided after the loop
  for (size_t li = 0; li < lens.size() && !d.stopped_early; ++li) {
    const int64_t len = lens[li];
    d.lens_run.push_back(len);
    for (size_t mi = 0; mi < modes.size() && !d.stopped_early; ++mi) {
      const AuditMode mode = modes[mi];
      if (std::find(d.modes_run.begin(), d.modes_run.end(), mode) == d.modes_run.end()) d.modes_run.push_back(mode);
      const TableKey key{mode, len};
      if (copied(mode, probed)) {
        if (!each) continue;  // copied once every table is in
        d.decisive.tables[key] = d.decisive.tables.at({AuditMode::kEval, len});
      } else {
        EffectTable t32;
        {
          const InPrecision own = prec.in_own();
          t32 = prober.probe_table(own, mode, len, d.first);
        }
        if (!each) {
          undecided.emplace_back(key, std::move(t32));
          continue;
        }
        d.decisive.tables[key] = decide_probed(prec, prober, mode, t32, d);
      }
      const bool leaks = judge(d.decisive.tables.at(key), d.threshold).horizon > opt.lookahead;
      const bool last = li + 1 == lens.size() && mi + 1 == modes.size();
      if (leaks && !last) {
        d.stopped_early = true;
        d.notes.push_back(fmt::format(
            "stopped at {} mode, L={}: the leak is proven there (gate setting); the remaining (mode, length) "
            "tables were not audited, and the horizon is that of the tables audited",
            mode_name(mode), len));
      }
    }
  }
  if (each) return d;
  for (const auto& [key, t32] : undecided) d.decisive.tables[key] = decide_probed(prec, prober, key.first, t32, d);
  copy_unprobed(d, probed);
  return d;
}

// The screen (screen_wanted): every table from trial 0's rows, the shortest
// length first (screen_all_zero). When all of them are exact zeros they stand (a model whose
// tables are zeros costs a third of the rows, in any order: each table is its own seeds' rows),
// and the result is what the schedule would have produced: every length and mode run, nothing
// stopped early. Otherwise nullopt: a leak that shows at every length shows in a pass of a row
// or two, and the tables are decided from the first without the screen, exactly as with
// --probe-every-row (the screen's rows are added to the probe count).
std::optional<DecidedTables> screened_schedule(PrecisionSwitch& prec, Prober& prober, const std::vector<int64_t>& lens,
                                               const std::vector<AuditMode>& modes, const std::vector<AuditMode>& probed,
                                               Pass& screen) {
  std::vector<int64_t> shortest_first = lens;
  std::stable_sort(shortest_first.begin(), shortest_first.end());
  std::vector<TableKey> keys;
  for (int64_t len : shortest_first)
    for (AuditMode mode : modes)
      if (!copied(mode, probed)) keys.emplace_back(mode, len);
  auto zeros = screen_all_zero(prec, prober, keys, Side::kFuture, screen);
  if (!zeros) return std::nullopt;
  DecidedTables d;
  d.lens_planned = d.lens_run = lens;
  d.modes_planned = d.modes_run = modes;
  for (size_t i = 0; i < keys.size(); ++i) d.decisive.tables[keys[i]] = std::move((*zeros)[i]);
  copy_unprobed(d, probed);
  return d;
}

DecidedTables decide_tables(PrecisionSwitch& prec, Prober& prober, const AuditOptions& opt,
                            const std::vector<int64_t>& lens, const std::vector<AuditMode>& modes,
                            const std::vector<AuditMode>& probed) {
  Pass screen;
  std::optional<DecidedTables> d;
  if (screen_wanted(opt)) d = screened_schedule(prec, prober, lens, modes, probed, screen);
  if (!d) d = decide_schedule(prec, prober, opt, lens, modes, probed);
  d->first.probes += screen.probes;
  return std::move(*d);
}

// Routing seen: each probed mode's table at the main length searched beyond that mode's horizon,
// in float64 where the target runs there (else its own dtype); the cells the search found above
// the horizon threshold raise the table's. Train tables proven equal to eval copy eval's again.
void search_routing(AuditRun& run, DecidedTables& d) {
  const auto known = [&](AuditMode mode) {
    int64_t h = 0;
    for (int64_t len : d.lens_run) h = std::max(h, table_horizon(d, mode, len));
    return h;
  };
  const auto merge = [&](AuditMode mode, const EffectTable& found, const InPrecision& in, double threshold) {
    EffectTable& table = d.decisive.tables.at({mode, run.L});
    EffectTable kept = EffectTable::zeros(run.L, in.dtype());
    for (int64_t t = 0; t < run.L; ++t)
      for (int64_t c = t + 1; c < run.L; ++c)
        if (found.at(t, c) > threshold && found.at(t, c) > table.at(t, c)) {
          kept.raise(t, c, found.at(t, c));
          table.raise(t, c, found.at(t, c));
          if (in.float64()) table.dtype = at::kDouble;  // a cell decided in float64
          d.threshold = threshold;
        }
    d.searched[{mode, run.L}] = std::move(kept);
  };
  search_probed_modes(run, Side::kFuture, known, merge);
  copy_unprobed(d, run.probed);
}

// Horizons per mode, per length and overall, and the first leaking cut (at the main length L
// when it leaks there, else the first audited table that leaks), from the decisive tables.
void summarise_horizons(const DecidedTables& d, int64_t L, AuditResult& r) {
  std::map<AuditMode, int64_t> mode_h;
  std::map<int64_t, int64_t> len_h;
  for (const auto& [key, table] : d.decisive.tables) {
    const auto [mode, len] = key;
    const auto v = judge(table, d.threshold);
    mode_h[mode] = std::max(mode_h[mode], v.horizon);
    len_h[len] = std::max(len_h[len], v.horizon);
    r.leak_horizon = std::max(r.leak_horizon, v.horizon);
    if (len == L && v.first_cut && (!r.first_leaking_cut || *v.first_cut < *r.first_leaking_cut))
      r.first_leaking_cut = v.first_cut;
  }
  if (!r.first_leaking_cut && r.leak_horizon > 0) {  // leaks only at other lengths
    for (int64_t len : d.lens_run)
      for (AuditMode mode : d.modes_run) {
        auto it = d.decisive.tables.find({mode, len});
        if (it == d.decisive.tables.end()) continue;  // not audited (stopped early)
        const auto v = judge(it->second, d.threshold);
        if (v.first_cut && !r.first_leaking_cut) r.first_leaking_cut = v.first_cut;
      }
  }
  // Where the dependence ends: the largest decisive cell at the horizon and one step beyond.
  auto effect_at = [&](int64_t D) -> std::optional<double> {
    std::optional<double> e;
    for (const auto& [key, table] : d.decisive.tables)
      for (int64_t t = 0; t + D < key.second; ++t) e = std::max(e.value_or(0.0), table.at(t, t + D));
    return e;
  };
  if (r.leak_horizon > 0) r.effect_at_horizon = effect_at(r.leak_horizon);
  r.effect_beyond_horizon = effect_at(r.leak_horizon + 1);
  for (AuditMode mode : d.modes_run) r.mode_horizons.emplace_back(mode_name(mode), mode_h[mode]);
  for (int64_t len : d.lens_run) r.length_horizons.emplace_back(len, len_h[len]);
}

// One mode's leak map at the main length L: map[t][D-1] = effect of inputs from t+D on on y_t;
// cells at or below the threshold read 0.
std::vector<std::vector<double>> leak_map_at(const DecidedTables& d, int64_t L, AuditMode mode) {
  std::vector<std::vector<double>> map(static_cast<size_t>(L));
  const auto it = d.decisive.tables.find({mode, L});
  for (int64_t t = 0; t < L; ++t) {
    auto& row = map[static_cast<size_t>(t)];
    for (int64_t D = 1; t + D < L; ++D) {
      const double e = it == d.decisive.tables.end() ? 0.0 : it->second.at(t, t + D);
      row.push_back(e > d.threshold ? e : 0.0);
    }
  }
  return map;
}

// Everything the result says about the tables: what ran, the precision, verdict and horizons,
// max effects, rounding_only, the leak map, and the notes gathered while deciding.
void summarise_tables(const DecidedTables& d, int64_t L, AuditResult& r) {
  r.seq_lens_planned = d.lens_planned;
  r.seq_lens = d.lens_run;
  for (AuditMode mode : d.modes_planned) r.modes_planned.emplace_back(mode_name(mode));
  for (AuditMode mode : d.modes_run) r.modes.emplace_back(mode_name(mode));
  r.stopped_early = d.stopped_early;
  r.notes.insert(r.notes.end(), d.notes.begin(), d.notes.end());
  r.max_effect_float32 = d.first.max_effect;
  r.precision = dtype_name(d.decisive.dtype());
  r.probes = d.first.probes + d.decisive.probes;

  summarise_horizons(d, L, r);
  r.max_effect = d.decisive.max_cell();
  if (r.rounding_only() && d.decisive.dtype() == at::kDouble)
    r.notes.push_back(fmt::format(
        "rounding only: float32 showed future effects up to {:.3g} (relative) that fall to {:.3g} in float64, "
        "below the {:.3g} leak threshold: arithmetic mixes positions at rounding level, outputs do not depend on "
        "the future",
        r.max_effect_float32, r.max_effect, d.threshold));
  else if (r.rounding_only())
    r.notes.push_back(fmt::format(
        "rounding only (float32 decided): future effects up to {:.3g} (relative), below the float32 threshold {:g}",
        r.max_effect_float32, d.threshold));
  r.map_seq_len = L;
  for (AuditMode mode : d.modes_run) r.leak_maps_by_mode.emplace_back(mode_name(mode), leak_map_at(d, L, mode));
}

// Where the leak horizon was seen: the strongest decisive cell at distance leak_horizon.
Evidence future_evidence(const DecidedTables& d, const AuditResult& r) {
  Evidence ev;
  if (r.leak_horizon == 0) return ev;
  bool searched = false;  // the strongest cell is the routing search's
  for (const auto& [key, table] : d.decisive.tables) {
    const auto v = judge(table, d.threshold);
    if (v.horizon != r.leak_horizon || v.effect <= ev.effect) continue;
    ev.mode = mode_name(key.first);
    ev.seq_len = key.second;
    ev.position = v.t;
    ev.cut = v.c;
    ev.effect = v.effect;
    const auto s = d.searched.find(key);
    searched = s != d.searched.end() && s->second.at(v.t, v.c) == v.effect;
  }
  ev.precision = r.precision;
  const std::string what = searched ? fmt::format("x_{} alone was replaced (routing search", ev.cut)
                                    : fmt::format("inputs from {} on were replaced (", ev.cut);
  ev.text = fmt::format("y_{} moved by {:.3g} (relative) when {}{}{} mode, L={}, {}): it reads x_{}", ev.position,
                        ev.effect, what, searched ? ", " : "", ev.mode, ev.seq_len, ev.precision,
                        ev.position + r.leak_horizon);
  return ev;
}

class FutureCheck : public Check {
 public:
  const char* name() const override { return "future"; }
  bool wanted(const AuditRun&) const override { return true; }
  bool in_structural_pass() const override { return true; }
  bool carries_horizon(ViolationKind k) const override { return k == ViolationKind::kFuture; }
  void run(AuditRun& run) override {
    const CoupledModes* coupled = run.outputs.get<CoupledModes>();
    const Prober::IsolatedRows isolated(run.prober, coupled ? coupled->modes : std::vector<AuditMode>{});
    run.prober.watch_ops(run.L);  // rides on the first forward at L the tables run
    DecidedTables d = decide_tables(run.prec, run.prober, run.opt, run.lens, run.modes, run.probed);
    run.outputs.put(WatchedOps{run.prober.watched_ops()});
    if (!d.stopped_early && routing_seen(run, Side::kFuture)) search_routing(run, d);
    summarise_tables(d, run.L, run.r);
    run.outputs.put(FutureHorizon{run.r.leak_horizon, d.lens_run});
    run.prec.record_decided(d.decisive.dtype());
    run.outputs.put(FutureEvidence{future_evidence(d, run.r)});
    run.outputs.put(std::move(d));
  }
  void judge(const AuditRun& run, std::vector<Violation>& out) const override {
    const AuditResult& r = run.r;
    const FutureEvidence* where = run.outputs.get<FutureEvidence>();
    if (r.leak_horizon > r.lookahead)
      out.push_back({ViolationKind::kFuture, r.leak_horizon, r.lookahead, where ? where->evidence : Evidence{}});
    else if (r.horizon_lower_bound)
      out.push_back({ViolationKind::kUnproven, r.leak_horizon, r.lookahead, unproven_evidence(r, "leak horizon")});
  }
  std::string headline(const Violation& v, const AuditResult&) const override {
    return v.kind == ViolationKind::kUnproven ? "NOT PROVEN (a routing search ended on its budget)" : "";
  }
  std::string summary(const AuditResult& r) const override { return routing_summary(r); }
  std::string headline_lead(const AuditResult& r) const override {
    const bool future = std::any_of(r.violations.begin(), r.violations.end(),
                                    [](const Violation& v) { return v.kind == ViolationKind::kFuture; });
    return fmt::format("{} (leak horizon {}, max effect {:.3g}", future ? "LEAKY" : "causal", r.leak_horizon,
                       r.max_effect);
  }
  bool states_in_lead(ViolationKind k) const override { return k == ViolationKind::kFuture; }
  // Where the dependence ends (and, from the gradient's path, whether it decays), and the first cut.
  std::string lead_lines(const AuditResult& r) const override {
    std::string s;
    if (r.leak_horizon > 0 && r.effect_at_horizon) {
      s += fmt::format("  leak horizon {} at threshold {:.3g} (effect {:.3g} there", r.leak_horizon, r.threshold(),
                       *r.effect_at_horizon);
      if (r.effect_beyond_horizon) s += fmt::format(", {:.3g} at {}", *r.effect_beyond_horizon, r.leak_horizon + 1);
      s += ")";
      if (r.decaying().value_or(false)) s += fmt::format(", decaying; a path reaches {}", *r.structural_horizon());
      s += "\n";
    }
    if (r.first_leaking_cut) s += fmt::format("  first leaking cut: {}\n", *r.first_leaking_cut);
    return s;
  }
  std::string output_facts(const AuditResult& r) const override {
    return fmt::format("leak horizon {}, max effect {:.3g}", r.leak_horizon, r.max_effect);
  }
  void write_output_json(const AuditResult& r, nlohmann::json& j) const override {
    j["leak_horizon"] = r.leak_horizon;
    j["max_effect"] = r.max_effect;
    j["rounding_only"] = r.rounding_only();
  }
  std::vector<std::string> thread_dependent() const override {
    return {"max_effect", "max_effect_float32", "leak_map", "effect_at_horizon", "effect_beyond_horizon",
            "outputs[].max_effect"};
  }
  void write_json(const AuditResult& r, nlohmann::json& j) const override {
    j["leak_horizon"] = r.leak_horizon;
    j["horizon_bound"] = r.horizon_lower_bound ? "lower" : "exact";
    j["discrete_routing"] = routing_json(r);
    j["max_effect"] = r.max_effect;
    j["first_leaking_cut"] = opt_json(r.first_leaking_cut);
    j["rounding_only"] = r.rounding_only();
    j["max_effect_float32"] = r.max_effect_float32;
    j["effect_at_horizon"] = opt_json(r.effect_at_horizon);
    j["effect_beyond_horizon"] = opt_json(r.effect_beyond_horizon);
    nlohmann::json mh = nlohmann::json::object();
    for (const auto& [m, h] : r.mode_horizons) mh[m] = h;
    j["mode_horizons"] = mh;
    nlohmann::json lh = nlohmann::json::object();
    for (const auto& [l, h] : r.length_horizons) lh[std::to_string(l)] = h;
    j["length_horizons"] = lh;
    auto cells_of = [](const std::vector<std::vector<double>>& map) {
      nlohmann::json cells = nlohmann::json::array();
      for (size_t t = 0; t < map.size(); ++t)
        for (size_t k = 0; k < map[t].size(); ++k)
          if (map[t][k] > 0) cells.push_back({t, k + 1, map[t][k]});
      return cells;
    };
    nlohmann::json by_mode = nlohmann::json::object();
    for (const auto& [mode, map] : r.leak_maps_by_mode) by_mode[mode] = cells_of(map);
    j["leak_map"] = {{"seq_len", r.map_seq_len}, {"cells", cells_of(r.leak_map())}, {"by_mode", by_mode}};
  }
  std::vector<Expectation> expectations() const override {
    // rounding_only says whether float32 showed exact zeros: a fact about the float32 kernels of
    // the PyTorch that made the suite, compared only on that version (audit_suite.cpp).
    return {{"rounding_only", [](const AuditResult& r) { return nlohmann::json(r.rounding_only()); }, true},
            {"discrete_routing", [](const AuditResult& r) { return nlohmann::json(r.discrete_routing.has_value()); }},
            {"horizon_bound", [](const AuditResult& r) { return nlohmann::json(r.horizon_lower_bound ? "lower" : "exact"); }}};
  }
};

}  // namespace

std::unique_ptr<Check> make_future_check() { return std::make_unique<FutureCheck>(); }

}  // namespace grassaudit
