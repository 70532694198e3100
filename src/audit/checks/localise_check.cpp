// Where the leak enters (audit/unit_probe.h): on a leaky verdict, every future leak named at the
// smallest units that read their own inputs' future. A unit's claim is its own probe: the unit
// fed, on the base rows, its own inputs from the probe rows at and after each row's cut (the rest
// held), and its outputs before the cut compared with the base's, decided as the tables are (in
// the precision that decided them, against their horizon threshold). A unit inside a site is the
// site; a unit around sites is one too only when it still moves with the sites inside it held to
// their base outputs before the cut (its own code reads ahead as well).
#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "audit/audit_prober.h"
#include "audit/checks/check.h"
#include "audit/checks/check_outputs.h"
#include "audit/checks/json_fields.h"
#include "audit/precision_switch.h"
#include "audit/unit_probe.h"

namespace grassaudit {
namespace {

// One unit's leaves in the forwards of one chunk of rows.
struct UnitAxes {
  std::vector<std::vector<int64_t>> in, out;  // the time axes of each input and output leaf
};

bool violated(const AuditResult& r, ViolationKind kind) {
  return std::any_of(r.violations.begin(), r.violations.end(), [&](const Violation& v) { return v.kind == kind; });
}

// Whether unit u lies inside unit a (a strict ancestor).
bool inside(const std::vector<ProbeUnit>& units, int u, int a) {
  for (int p = units[static_cast<size_t>(u)].parent; p >= 0; p = units[static_cast<size_t>(p)].parent)
    if (p == a) return true;
  return false;
}

int depth(const std::vector<ProbeUnit>& units, int u) {
  int d = 0;
  for (int p = units[static_cast<size_t>(u)].parent; p >= 0; p = units[static_cast<size_t>(p)].parent) ++d;
  return d;
}

std::vector<int64_t> shape_of(const at::Tensor& t) { return t.sizes().vec(); }

// Rows [n, ...] as [chunk, ...]: row i % n at row i (the bases tiled, or the last probe row
// repeated to fill the chunk's shape, as the tables' passes are).
at::Tensor tiled(const at::Tensor& rows, int64_t chunk) {
  const int64_t n = rows.size(0);
  const auto idx = at::arange(chunk, at::kLong).clamp_max(n - 1);
  return rows.index_select(0, n == 1 ? at::zeros({chunk}, at::kLong) : idx).contiguous();
}

class Localiser {
 public:
  Localiser(AuditRun& run, UnitProbe& probe, AuditMode mode, const InPrecision& in)
      : run_(run), probe_(probe), units_(probe.units()), mode_(mode), in_(in), L_(run.L) {
    tables_.assign(units_.size(), EffectTable::zeros(L_, in.dtype()));
    testable_.assign(units_.size(), true);
  }

  // `rows_mix`: the mode's rows mix (the batch check's output), so each probe row runs alone, as
  // the tables' passes did: a unit that mixes rows must not read as one that reads ahead.
  std::vector<LeakSite> sites(double threshold, bool rows_mix) {
    const Prober::ProbeRows rows =
        run_.prober.cut_rows(in_, mode_, L_, {}, Side::kFuture, /*first_trial_only=*/true);
    const int64_t R = rows.rows.size(0);
    const int64_t chunk = rows_mix ? 1 : std::min(std::max<int64_t>(1, run_.opt.batch), R);
    const at::Tensor base = tiled(rows.bases, chunk);
    axes_ = unit_axes(base, rows.dropout_seed);
    for (int64_t start = 0; start < R; start += chunk) {
      const int64_t n = std::min(chunk, R - start);
      std::vector<int64_t> cut_list;
      for (int64_t i = 0; i < chunk; ++i) cut_list.push_back(rows.columns[static_cast<size_t>(std::min(start + i, R - 1))]);
      const at::Tensor cuts = at::tensor(cut_list, at::kLong);
      chunk_effects(base, tiled(rows.rows.narrow(0, start, n), chunk), cuts, n, rows.dropout_seed);
    }
    std::vector<bool> leaky(units_.size(), false);
    for (size_t u = 0; u < units_.size(); ++u) leaky[u] = testable_[u] && judge(tables_[u], threshold).horizon > 0;
    const std::vector<int> found = innermost(leaky, [&](int u, const std::vector<int>& within) {
      return still_leaks(u, within, rows, base, chunk, threshold);
    });
    std::vector<LeakSite> out;
    for (int u : found)
      out.push_back(site(u, judge(tables_[static_cast<size_t>(u)], threshold).horizon, ViolationKind::kFuture));
    std::sort(out.begin(), out.end(), [](const LeakSite& a, const LeakSite& b) { return a.path < b.path; });
    return out;
  }

  // The units that mix the rows of a batch by themselves: fed, on base rows, their own inputs
  // with the odd rows' taken from a pass whose odd rows were replaced (the kept even rows' as
  // they were), their outputs in the kept rows move beyond `threshold` (the batch check's
  // comparison threshold). Innermost first, as for the future.
  std::vector<LeakSite> batch_sites(double threshold) {
    const Prober::ProbeRows rows =
        run_.prober.cut_rows(in_, mode_, L_, {}, Side::kFuture, /*first_trial_only=*/true);
    const uint64_t seed = rows.dropout_seed;
    const int64_t B = std::min(std::max<int64_t>(2, run_.opt.batch), rows.rows.size(0));
    if (B < 2) return {};
    const at::Tensor base = rows.rows.narrow(0, 0, B).contiguous();
    const at::Tensor keep = at::arange(B, at::kLong).remainder(2).eq(0);  // [B]
    const at::Tensor mixed = rows_mixed(base, base.roll(1, 0), keep);
    const auto a = forward(base, seed);
    const auto b = forward(mixed, seed);
    // A unit's leaves with only the other rows' from the mixed pass; nullopt where a leaf without
    // the rows moved (it cannot be fed apart from the kept rows).
    const auto mixed_leaves = [&](const std::vector<at::Tensor>& x,
                                  const std::vector<at::Tensor>& y) -> std::optional<std::vector<at::Tensor>> {
      std::vector<at::Tensor> out;
      for (size_t k = 0; k < x.size(); ++k) {
        if (!rowed(x[k], B) && !at::equal(x[k], y[k])) return std::nullopt;
        out.push_back(rowed(x[k], B) ? rows_mixed(x[k], y[k], keep) : x[k]);
      }
      return out;
    };
    const auto moves = [&](size_t u, const std::vector<at::Tensor>& y) {
      double e = 0;
      for (size_t k = 0; k < y.size() && k < a[u].outputs.size(); ++k)
        if (rowed(a[u].outputs[k], B)) e = std::max(e, effect_in_kept_rows(y[k], a[u].outputs[k], keep));
      return e > threshold;
    };
    std::vector<std::optional<std::vector<at::Tensor>>> feeds(units_.size());
    for (size_t u = 0; u < units_.size(); ++u)
      if (same_leaves(a[u], b[u]) && std::any_of(a[u].outputs.begin(), a[u].outputs.end(),
                                                 [&](const at::Tensor& t) { return rowed(t, B); }))
        feeds[u] = mixed_leaves(a[u].inputs, b[u].inputs);  // the rows come out
    // A site inside another is held to the base in the kept rows.
    const auto held_of = [&](size_t s) {
      std::vector<at::Tensor> held;
      for (size_t k = 0; k < a[s].outputs.size(); ++k)
        held.push_back(rowed(a[s].outputs[k], B) ? rows_mixed(a[s].outputs[k], b[s].outputs[k], keep) : a[s].outputs[k]);
      return held;
    };
    return sites_of(ViolationKind::kBatch, b, feeds, moves, held_of,
                    [&](const UnitTensors& fed, const UnitTensors& held, bool whole) {
                      return forward(whole ? mixed : base, seed, fed, held);
                    });
  }

  // The units whose outputs depend on the length by themselves: in a run of the prefix of
  // length p alone, a unit fed its own inputs of the full run (cut to p) gives outputs at
  // t < p - guard that differ beyond `threshold` from its full-run outputs there (the length
  // check's comparison, one sequence, eval mode). Innermost first, as for the future.
  std::vector<LeakSite> length_sites(double threshold, int64_t p, int64_t guard) {
    if (p - guard <= 0 || p >= L_) return {};
    const Prober::ProbeRows rows =
        run_.prober.cut_rows(in_, mode_, L_, {}, Side::kFuture, /*first_trial_only=*/true);
    const uint64_t seed = rows.dropout_seed;
    const at::Tensor x = rows.bases.narrow(0, 0, 1).contiguous();
    const auto a = forward(x, seed);                  // the full length
    const auto b = forward(x.narrow(1, 0, p), seed);  // the prefix alone
    const at::Tensor cut = at::tensor(std::vector<int64_t>{p - guard}, at::kLong);
    std::vector<UnitAxes> axes(units_.size());
    // A unit's full-run leaves cut to p along their time axes; nullopt where a cut leaf is not
    // the shape the prefix run gave it (a length that is not the time's).
    const auto cut_to_p = [&](const std::vector<at::Tensor>& full, const std::vector<at::Tensor>& prefix,
                              const std::vector<std::vector<int64_t>>& ax) -> std::optional<std::vector<at::Tensor>> {
      std::vector<at::Tensor> out;
      for (size_t k = 0; k < full.size(); ++k) {
        at::Tensor t = full[k];
        for (int64_t d : ax[k]) t = t.narrow(d, 0, p);
        if (!t.sizes().equals(prefix[k].sizes())) return std::nullopt;
        out.push_back(t.contiguous());
      }
      return out;
    };
    const auto leaf_axes = [&](const std::vector<at::Tensor>& at_L, const std::vector<at::Tensor>& at_p) {
      std::vector<std::vector<int64_t>> out;
      for (size_t k = 0; k < at_L.size(); ++k) out.push_back(time_axes(shape_of(at_L[k]), shape_of(at_p[k]), L_, p));
      return out;
    };
    std::vector<std::optional<std::vector<at::Tensor>>> feeds(units_.size()), full_out(units_.size());
    for (size_t u = 0; u < units_.size(); ++u) {
      if (!same_leaves(a[u], b[u])) continue;
      axes[u] = {leaf_axes(a[u].inputs, b[u].inputs), leaf_axes(a[u].outputs, b[u].outputs)};
      if (!has_time(axes[u].out)) continue;
      full_out[u] = cut_to_p(a[u].outputs, b[u].outputs, axes[u].out);
      if (full_out[u]) feeds[u] = cut_to_p(a[u].inputs, b[u].inputs, axes[u].in);
    }
    const auto moves = [&](size_t u, const std::vector<at::Tensor>& y) {
      double e = 0;
      for (size_t k = 0; k < y.size() && k < full_out[u]->size(); ++k)
        if (!axes[u].out[k].empty())
          e = std::max(e, effect_before_cut(y[k], (*full_out[u])[k], axes[u].out[k], cut, p).max().item<double>());
      return e > threshold;
    };
    // A site inside another is held to its full-run outputs.
    return sites_of(ViolationKind::kLength, b, feeds, moves, [&](size_t s) { return *full_out[s]; },
                    [&](const UnitTensors& fed, const UnitTensors& held, bool) {
                      return forward(x.narrow(1, 0, p), seed, fed, held);
                    });
  }

 private:
  // Whether a unit was called in both passes with leaves of the same counts.
  static bool same_leaves(const UnitValues& a, const UnitValues& b) {
    return a.called && b.called && a.inputs.size() == b.inputs.size() && a.outputs.size() == b.outputs.size();
  }

  // Each unit's own probe: its outputs when fed `feeds[u]` (nullopt: the unit is not probed; the
  // root's own probe is the probe pass `b` itself). Where a unit's feed is what the probe pass gave
  // it, that pass is its own probe; the others are fed in one `run_fed` forward per depth (units
  // of one depth never lie inside each other).
  std::vector<std::optional<std::vector<at::Tensor>>> own_probes(
      const std::vector<UnitValues>& b, const std::vector<std::optional<std::vector<at::Tensor>>>& feeds,
      const std::function<std::vector<UnitValues>(const UnitTensors&)>& run_fed) {
    std::vector<std::optional<std::vector<at::Tensor>>> own(units_.size());
    std::map<int, std::vector<int>> by_depth;
    for (size_t u = 0; u < units_.size(); ++u) {
      if (!feeds[u]) continue;
      const auto& fed = *feeds[u];
      bool free = u == 0;
      if (!free) {
        free = fed.size() == b[u].inputs.size();
        for (size_t k = 0; k < fed.size() && free; ++k)
          free = fed[k].sizes().equals(b[u].inputs[k].sizes()) && at::equal(fed[k], b[u].inputs[k]);
      }
      if (free)
        own[u] = b[u].outputs;
      else
        by_depth[depth(units_, static_cast<int>(u))].push_back(static_cast<int>(u));
    }
    for (const auto& [d, us] : by_depth) {
      UnitTensors fed;
      for (int u : us) fed[u] = *feeds[static_cast<size_t>(u)];
      const auto h = run_fed(fed);
      for (int u : us) own[static_cast<size_t>(u)] = h[static_cast<size_t>(u)].outputs;
    }
    return own;
  }

  using Leaves = std::vector<at::Tensor>;
  // The batch's and the length's sites: each unit's own probe (`feeds`, run by `run` with no
  // unit held), the units whose own probe `moves`, innermost first: a unit around sites is one too
  // when, fed again with those inside it held to `held_of(s)`, it still moves. `run`'s `whole`:
  // the root's own probe (the probe pass's input), else the base's.
  std::vector<LeakSite> sites_of(ViolationKind kind, const std::vector<UnitValues>& b,
                                 const std::vector<std::optional<Leaves>>& feeds,
                                 const std::function<bool(size_t, const Leaves&)>& moves,
                                 const std::function<Leaves(size_t)>& held_of,
                                 const std::function<std::vector<UnitValues>(const UnitTensors&, const UnitTensors&, bool)>& run) {
    const auto own = own_probes(b, feeds, [&](const UnitTensors& fed) { return run(fed, {}, false); });
    std::vector<bool> moved(units_.size());
    for (size_t u = 0; u < units_.size(); ++u) moved[u] = own[u] && moves(u, *own[u]);
    std::vector<LeakSite> out;
    for (int u : innermost(moved, [&](int u, const std::vector<int>& within) {
           const auto uu = static_cast<size_t>(u);
           UnitTensors held, fed;
           for (int s : within) held[s] = held_of(static_cast<size_t>(s));
           if (u != 0) fed[u] = *feeds[uu];
           return moves(uu, run(fed, held, u == 0)[uu].outputs);
         }))
      out.push_back(site(u, 0, kind));
    return out;
  }

  // The sites among the units that move by themselves, innermost first: a unit around sites is
  // one too only when `still_moves(u, the sites inside it)` says it moves with them held.
  std::vector<int> innermost(const std::vector<bool>& moves,
                             const std::function<bool(int, const std::vector<int>&)>& still_moves) const {
    std::vector<int> found;
    for (int u = static_cast<int>(units_.size()) - 1; u >= 0; --u) {
      if (!moves[static_cast<size_t>(u)]) continue;
      std::vector<int> within;
      for (int s : found)
        if (inside(units_, s, u)) within.push_back(s);
      if (within.empty() || still_moves(u, within)) found.push_back(u);
    }
    return found;
  }

  LeakSite site(int u, int64_t horizon, ViolationKind violation) const {
    const ProbeUnit& pu = units_[static_cast<size_t>(u)];
    LeakSite s;
    s.path = pu.path;
    s.op = pu.op;
    s.source = pu.source;
    s.node = pu.node;
    s.horizon = horizon;
    s.violation = violation;
    s.mode = mode_name(mode_);
    return s;
  }

  // One forward of the probe in the site's mode; train mode reseeds the RNG before every forward,
  // as the tables' passes do, so dropout draws match row for row.
  std::vector<UnitValues> forward(const at::Tensor& x, uint64_t seed, const UnitTensors& fed = {},
                                  const UnitTensors& held = {}) {
    at::NoGradGuard no_grad;
    run_.target.set_train(mode_ == AuditMode::kTrain);
    if (mode_ == AuditMode::kTrain) at::manual_seed(seed);
    record_forward(in_.dtype(), x.size(0), x.size(1));
    return probe_.run(x, fed, held);
  }

  // The time axes of every unit's leaves, from its shapes at L and at a second length of the
  // schedule (none: every axis of size L but the rows).
  std::vector<UnitAxes> unit_axes(const at::Tensor& base, uint64_t seed) {
    int64_t L2 = 0;
    for (int64_t len : run_.lens)
      if (len != L_ && len >= 2) {
        L2 = len;
        break;
      }
    const auto at_L = forward(tiled(base.narrow(0, 0, 1), 2), seed);
    std::vector<UnitValues> at_L2;
    if (L2 > 0) {
      try {
        at_L2 = forward(tiled(base.narrow(0, 0, 1).narrow(1, 0, L2), 2), seed);
      } catch (const std::exception&) {
        L2 = 0;  // the model does not run there: axes of size L only
      }
    }
    std::vector<UnitAxes> axes(units_.size());
    for (size_t u = 0; u < units_.size(); ++u) {
      const auto leaves = [&](bool outputs) {
        std::vector<std::vector<int64_t>> out;
        const auto& a = outputs ? at_L[u].outputs : at_L[u].inputs;
        for (size_t k = 0; k < a.size(); ++k) {
          std::vector<int64_t> second;
          if (L2 > 0 && u < at_L2.size()) {
            const auto& b = outputs ? at_L2[u].outputs : at_L2[u].inputs;
            if (k < b.size()) second = shape_of(b[k]);
          }
          out.push_back(time_axes(shape_of(a[k]), second, L_, L2 > 0 && !second.empty() ? L2 : 0));
        }
        return out;
      };
      axes[u].in = leaves(false);
      axes[u].out = leaves(true);
    }
    return axes;
  }

  // One chunk: the base and probe forwards, then each unit's own probe (its inputs fed at the cut;
  // own_probes: free where they are what the probe pass gave it); each unit's cells raised into
  // its table.
  void chunk_effects(const at::Tensor& base, const at::Tensor& probe_rows, const at::Tensor& cuts, int64_t n,
                     uint64_t seed) {
    const auto a = forward(base, seed);
    const auto b = forward(probe_rows, seed);
    std::vector<std::optional<std::vector<at::Tensor>>> feeds(units_.size());
    for (size_t u = 0; u < units_.size(); ++u) {
      if (!testable_[u]) continue;
      if (!same_leaves(a[u], b[u]) || !has_time(axes_[u].out)) {
        testable_[u] = false;  // not called, called otherwise, or nothing with a time axis comes out
        continue;
      }
      feeds[u] = fed_inputs(a[u], b[u], u, cuts);
      if (!feeds[u]) testable_[u] = false;  // a leaf without a time axis moved
    }
    const auto own = own_probes(b, feeds, [&](const UnitTensors& fed) { return forward(base, seed, fed); });
    for (size_t u = 0; u < units_.size(); ++u)
      if (testable_[u] && own[u]) raise(u, a[u].outputs, *own[u], cuts, n);
  }

  // A unit's inputs as it sees them with only its own future replaced: the probe pass's from each
  // row's cut on; nullopt where a leaf without a time axis (or without the rows) moved.
  std::optional<std::vector<at::Tensor>> fed_inputs(const UnitValues& a, const UnitValues& b, size_t u,
                                                    const at::Tensor& cuts) {
    std::vector<at::Tensor> fed;
    for (size_t k = 0; k < a.inputs.size(); ++k) {
      const auto& ax = k < axes_[u].in.size() ? axes_[u].in[k] : std::vector<int64_t>{};
      const bool follows = !ax.empty() && rowed(a.inputs[k], cuts.size(0));
      if (!follows && !at::equal(a.inputs[k], b.inputs[k])) return std::nullopt;
      fed.push_back(follows ? fed_at_cut(a.inputs[k], b.inputs[k], ax, cuts) : a.inputs[k]);
    }
    return fed;
  }


  // Whether a leaf has the rows of the pass as its first axis (a mask [L, L], a parameter: no).
  static bool rowed(const at::Tensor& t, int64_t R) { return t.dim() >= 2 && t.size(0) == R; }

  static bool has_time(const std::vector<std::vector<int64_t>>& leaves) {
    return std::any_of(leaves.begin(), leaves.end(), [](const auto& ax) { return !ax.empty(); });
  }

  // Cells (t, cut of row r) of unit u's table from its outputs on the base rows and in its own probe.
  void raise(size_t u, const std::vector<at::Tensor>& base_out, const std::vector<at::Tensor>& probed,
             const at::Tensor& cuts, int64_t n) {
    raise_into(tables_[u], axes_[u].out, base_out, probed, cuts, n);
  }

  void raise_into(EffectTable& table, const std::vector<std::vector<int64_t>>& out_axes,
                  const std::vector<at::Tensor>& base_out, const std::vector<at::Tensor>& probed,
                  const at::Tensor& cuts, int64_t n) const {
    const auto cut = cuts.accessor<int64_t, 1>();
    for (size_t k = 0; k < base_out.size() && k < probed.size() && k < out_axes.size(); ++k) {
      if (out_axes[k].empty() || !rowed(base_out[k], cuts.size(0))) continue;
      const at::Tensor e = effect_before_cut(probed[k], base_out[k], out_axes[k], cuts, L_);  // [R, L]
      const auto acc = e.accessor<double, 2>();
      for (int64_t r = 0; r < n; ++r)
        for (int64_t t = 0; t < cut[r]; ++t) table.raise(t, cut[r], acc[r][t]);
    }
  }

  // Unit u (around the sites `within`) fed its own inputs at the cut, with those sites held to
  // their base outputs before the cut: whether it still reads ahead. Its table becomes that
  // probe's.
  bool still_leaks(int u, const std::vector<int>& within, const Prober::ProbeRows& rows, const at::Tensor& base,
                   int64_t chunk, double threshold) {
    EffectTable table = EffectTable::zeros(L_, in_.dtype());
    const int64_t R = rows.rows.size(0);
    for (int64_t start = 0; start < R; start += chunk) {
      const int64_t n = std::min(chunk, R - start);
      std::vector<int64_t> cut_list;
      for (int64_t i = 0; i < chunk; ++i) cut_list.push_back(rows.columns[static_cast<size_t>(std::min(start + i, R - 1))]);
      const at::Tensor cuts = at::tensor(cut_list, at::kLong);
      const at::Tensor probe_rows = tiled(rows.rows.narrow(0, start, n), chunk);
      const auto a = forward(base, rows.dropout_seed);
      const auto b = forward(probe_rows, rows.dropout_seed);
      UnitTensors held;
      for (int s : within) {
        std::vector<at::Tensor> outs;
        const auto su = static_cast<size_t>(s);
        for (size_t k = 0; k < a[su].outputs.size(); ++k)
          outs.push_back(rowed(a[su].outputs[k], cuts.size(0))
                             ? held_before_cut(b[su].outputs[k], a[su].outputs[k], axes_[su].out[k], cuts)
                             : a[su].outputs[k]);
        held[s] = outs;
      }
      const auto uu = static_cast<size_t>(u);
      UnitTensors fed;
      if (u != 0) {
        auto f = fed_inputs(a[uu], b[uu], uu, cuts);
        if (!f) return false;  // it cannot be fed apart here: not a site by itself
        fed[u] = std::move(*f);
      }
      const auto h = forward(u == 0 ? probe_rows : base, rows.dropout_seed, fed, held);
      raise_into(table, axes_[uu].out, a[uu].outputs, h[uu].outputs, cuts, n);
    }
    tables_[static_cast<size_t>(u)] = table;
    return judge(table, threshold).horizon > 0;
  }

  AuditRun& run_;
  UnitProbe& probe_;
  const std::vector<ProbeUnit>& units_;
  AuditMode mode_;
  const InPrecision& in_;
  int64_t L_;
  std::vector<UnitAxes> axes_;
  std::vector<EffectTable> tables_;
  std::vector<bool> testable_;
};

nlohmann::json site_json(const LeakSite& s) {
  nlohmann::json j{{"path", s.path}, {"violation", violation_kind_name(s.violation)}, {"mode", s.mode}};
  if (s.op) j["op"] = *s.op;
  if (s.source) j["source"] = *s.source;
  if (s.node) j["node"] = *s.node;
  if (s.violation == ViolationKind::kFuture || s.violation == ViolationKind::kWindow) j["horizon"] = s.horizon;
  return j;
}

nlohmann::json sites_json(const AuditResult& r) {
  if (!r.leak_sites) return nullptr;
  nlohmann::json a = nlohmann::json::array();
  for (const auto& s : *r.leak_sites) a.push_back(site_json(s));
  return a;
}

class LocaliseCheck : public Check {
 public:
  const char* name() const override { return "localise"; }
  Stage stage() const override { return Stage::kAfterVerdict; }
  bool wanted(const AuditRun& run) const override {
    if (!run.opt.localise || run.opt.stop_when_leaky) return false;
    return violated(run.r, ViolationKind::kFuture) || violated(run.r, ViolationKind::kBatch) ||
           violated(run.r, ViolationKind::kLength);
  }
  void run(AuditRun& run) override {
    AuditResult& r = run.r;
    UnitProbe* probe = run.target.unit_probe();
    if (!probe) {
      r.notes.push_back("leak sites: not looked for: " + run.target.why_no_units() + "; the verdict stands");
      return;
    }
    std::optional<std::vector<LeakSite>> all;
    // Each violation's sites in the mode its evidence was seen in and the precision that decided
    // it (the future tables': `tables`; the batch and length comparisons': the deciding one); one
    // that cannot be followed says why in a note and leaves the other's sites standing.
    const auto look = [&](const char* what, const std::string& evidence_mode, bool tables, const char* none,
                          const std::function<std::vector<LeakSite>(Localiser&)>& find) {
      const AuditMode mode = evidence_mode == "train" ? AuditMode::kTrain : AuditMode::kEval;
      try {
        const InPrecision in = tables ? run.prec.in_decided() : run.prec.in_deciding();
        Localiser localiser(run, *probe, mode, in);
        auto sites = find(localiser);
        if (sites.empty()) r.notes.push_back(fmt::format("leak sites{}: none named: {}; the verdict stands", what, none));
        if (!all) all.emplace();
        all->insert(all->end(), sites.begin(), sites.end());
      } catch (const std::exception& e) {
        r.notes.push_back(fmt::format("leak sites{}: not run ({}); the verdict stands", what, failure_line(e)));
      }
    };
    if (violated(r, ViolationKind::kFuture)) {
      const FutureEvidence* where = run.outputs.get<FutureEvidence>();
      const std::string mode = where ? where->evidence.mode : "eval";
      const CoupledModes* coupled = run.outputs.get<CoupledModes>();
      const bool rows_mix = coupled && std::find(coupled->modes.begin(), coupled->modes.end(),
                                                 mode == "train" ? AuditMode::kTrain : AuditMode::kEval) !=
                                           coupled->modes.end();
      look("", mode, /*tables=*/true,
           "no unit the audit can follow (one whose outputs have a time axis) reads ahead by itself on these rows",
           [&](Localiser& l) { return l.sites(run.prec.horizon_threshold(), rows_mix); });
    }
    if (violated(r, ViolationKind::kBatch))
      look(" of the batch coupling", r.batch_evidence.mode, /*tables=*/false,
           "no unit the audit can follow (one whose outputs keep the rows) mixes the rows by itself",
           [&](Localiser& l) { return l.batch_sites(run.prec.threshold()); });
    if (violated(r, ViolationKind::kLength)) {
      const FutureHorizon* future = run.outputs.get<FutureHorizon>();
      const int64_t guard = std::max(run.opt.lookahead, future ? future->horizon : 0);
      look(" of the length dependence", "eval", /*tables=*/false,
           "no unit the audit can follow (one whose outputs have a time axis) depends on the length by itself",
           [&](Localiser& l) { return l.length_sites(run.prec.threshold(), r.length_evidence.prefix_len, guard); });
    }
    r.leak_sites = std::move(all);
  }
  void write_json(const AuditResult& r, nlohmann::json& j) const override { j["leak_sites"] = sites_json(r); }
  void write_output_json(const AuditResult& r, nlohmann::json& j) const override { j["leak_sites"] = sites_json(r); }
  std::string summary(const AuditResult& r) const override {
    if (!r.leak_sites) return "";
    std::string out;
    for (const auto& s : *r.leak_sites) {
      const std::string where = s.path.empty() ? "the model's own forward" : s.path;
      std::string what;
      if (s.source) what = *s.source;
      else if (s.op) what = *s.op;
      if (s.node) what += (what.empty() ? "" : ", ") + std::string("node ") + *s.node;
      const std::string claim = s.violation == ViolationKind::kBatch    ? std::string("it mixes the rows of a batch")
                                : s.violation == ViolationKind::kLength ? std::string("it depends on the length")
                                                                        : fmt::format("its own horizon {}", s.horizon);
      out += fmt::format("  leak enters at {}{}: {}{}\n", where, what.empty() ? "" : " (" + what + ")", claim,
                         s.mode == "train" ? ", train mode" : "");
    }
    return out;
  }
  std::vector<Expectation> expectations() const override {
    // The sorted paths of the sites (null: not looked for).
    return {{"leak_sites", [](const AuditResult& r) {
               if (!r.leak_sites) return nlohmann::json(nullptr);
               std::set<std::string> paths;
               for (const auto& s : *r.leak_sites) paths.insert(s.path);
               return nlohmann::json(std::vector<std::string>(paths.begin(), paths.end()));
             }}};
  }
};

}  // namespace

std::unique_ptr<Check> make_localise_check() { return std::make_unique<LocaliseCheck>(); }

}  // namespace grassaudit
