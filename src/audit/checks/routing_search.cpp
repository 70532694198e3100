#include "audit/checks/routing_search.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>

#include "audit/audit_cost.h"
#include "audit/audit_prober.h"
#include "audit/checks/check_outputs.h"
#include "audit/precision_switch.h"

namespace grassaudit {

bool routing_seen(AuditRun& run, Side side) {
  const WatchedOps* watched = run.outputs.get<WatchedOps>();
  const std::optional<std::vector<DiscreteOp>> ops = watched ? watched->ops : std::nullopt;
  const auto& mixed = run.prober.mixed_cell(side);
  if ((!ops || ops->empty()) && !mixed) return run.r.discrete_routing.has_value();
  if (!run.r.discrete_routing) {
    run.r.discrete_routing.emplace();
    run.r.discrete_routing->budget = run.opt.routing_budget;
  }
  DiscreteRouting& dr = *run.r.discrete_routing;
  if (ops && dr.ops.empty())
    for (const auto& op : *ops) dr.ops.push_back({op.op, describe(op)});
  if (mixed) {
    const bool future = side == Side::kFuture;
    std::string line = fmt::format(
        "{} tables, {} mode, L={}: y_{} moved in one trial and not at all in another when the inputs {} {}{} were "
        "replaced",
        future ? "future" : "past", mode_name(mixed->mode), mixed->L, mixed->t,
        future ? "from" : "before", mixed->c, future ? " on" : "");
    if (std::find(dr.trials.begin(), dr.trials.end(), line) == dr.trials.end()) dr.trials.push_back(std::move(line));
  }
  return true;
}

EffectTable routing_search(AuditRun& run, const InPrecision& in, AuditMode mode, Side side, int64_t known,
                           double threshold) {
  const CostSection section("routing");
  const int64_t L = run.L;
  const bool future = side == Side::kFuture;
  const int64_t per_position = kSearchBases * kSearchSubstitutions;
  RoutingSearchRecord rec;
  rec.side = future ? "future" : "past";
  rec.mode = mode_name(mode);
  rec.seq_len = L;
  rec.horizon_before = known;
  EffectTable found = EffectTable::zeros(L, in.dtype());
  int64_t h = known;
  for (int64_t round = 0;; ++round) {
    // The positions whose replacement could still reach beyond h, the farthest reach first:
    // future x_s reaches back to y_0 (distance s), past x_s forward to y_{L-1} (distance L-1-s).
    std::vector<int64_t> positions;
    for (int64_t k = L - 1; k > h; --k) positions.push_back(future ? k : L - 1 - k);
    if (positions.empty()) break;
    const int64_t room = std::max<int64_t>(0, (run.opt.routing_budget - rec.rows) / per_position);
    if (room < static_cast<int64_t>(positions.size())) {
      // Within the plan, a round cut short leaves a lower bound; after it, the rest of the budget
      // goes to the farthest reach.
      if (round < kSearchRounds) rec.exhausted = false;
      positions.resize(static_cast<size_t>(room));
      if (positions.empty()) break;
    }
    const EffectTable t =
        run.prober.single_position_table(in, mode, L, positions, kSearchBases, kSearchSubstitutions, round, side);
    rec.rows += static_cast<int64_t>(positions.size()) * per_position;
    ++rec.rounds;
    for (size_t k = 0; k < found.effect.size(); ++k) found.effect[k] = std::max(found.effect[k], t.effect[k]);
    h = std::max(h, judge(found, threshold, side).horizon);
    if (!rec.exhausted || static_cast<int64_t>(positions.size()) == room) break;  // the budget is spent
  }
  rec.horizon_after = h;
  // A horizon of L - 1 is the farthest there is: no budget could raise it.
  const bool lower = !rec.exhausted && h < L - 1;
  (future ? run.r.horizon_lower_bound : run.r.past_horizon_lower_bound) |= lower;
  run.r.discrete_routing->searches.push_back(rec);
  return found;
}

void search_probed_modes(AuditRun& run, Side side, const std::function<int64_t(AuditMode)>& known,
                         const RoutingFound& found) {
  const InPrecision in = run.prec.in_deciding();
  const double threshold = run.prec.horizon_threshold();
  for (AuditMode mode : run.probed) found(mode, routing_search(run, in, mode, side, known(mode), threshold), in, threshold);
}

nlohmann::json routing_json(const AuditResult& r) {
  if (!r.discrete_routing) return nullptr;
  const DiscreteRouting& dr = *r.discrete_routing;
  nlohmann::json ops = nlohmann::json::array();
  for (const auto& op : dr.ops) ops.push_back({{"op", op.op}, {"where", op.where}});
  nlohmann::json searches = nlohmann::json::array();
  for (const auto& s : dr.searches)
    searches.push_back({{"side", s.side}, {"mode", s.mode}, {"seq_len", s.seq_len},
                        {"horizon_before", s.horizon_before}, {"horizon_after", s.horizon_after},
                        {"rows", s.rows}, {"rounds", s.rounds}, {"exhausted", s.exhausted}});
  return {{"ops", ops}, {"trials", dr.trials}, {"budget", dr.budget}, {"searches", searches}};
}

std::string routing_summary(const AuditResult& r) {
  if (!r.discrete_routing) return "";
  const DiscreteRouting& dr = *r.discrete_routing;
  std::vector<std::string> seen;
  for (const auto& op : dr.ops) seen.push_back(op.where);
  for (const auto& t : dr.trials) seen.push_back(t);
  std::vector<std::string> searched;
  int64_t rows = 0;
  for (const auto& s : dr.searches) {
    rows += s.rows;
    searched.push_back(fmt::format("{} {} {} -> {}{}", s.side, s.mode, s.horizon_before, s.horizon_after,
                                   s.exhausted ? "" : " (budget ended it)"));
  }
  std::string out = fmt::format("  discrete routing: {}\n", fmt::join(seen, "; "));
  out += fmt::format("  routing search: {} single-position rows (horizons {})\n", rows, fmt::join(searched, ", "));
  if (r.horizon_lower_bound)
    out += fmt::format("  leak horizon {} is a lower bound: the routing search ended on its budget (--routing-budget {})\n",
                       r.leak_horizon, dr.budget);
  if (r.past_horizon_lower_bound && r.past_horizon)
    out += fmt::format("  past horizon {} is a lower bound: the routing search ended on its budget (--routing-budget {})\n",
                       *r.past_horizon, dr.budget);
  return out;
}

Evidence unproven_evidence(const AuditResult& r, const std::string& what) {
  Evidence ev;
  ev.text = fmt::format(
      "a selection over time shows and the routing search ended on its budget (--routing-budget {}) before its plan "
      "was done: the {} found is a lower bound, which proves no contract",
      r.discrete_routing ? r.discrete_routing->budget : 0, what);
  return ev;
}

}  // namespace grassaudit
