#include "report/seed_groups.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "report/format.h"
#include "report/labels.h"

namespace grassaudit {
namespace {

// True when every member records a seed and no two share one: the runs differ only by seed.
bool distinct_seeds(const std::vector<const RunRecord*>& members) {
  std::set<long long> seen;
  for (const auto* r : members) {
    if (!r->seed || !seen.insert(*r->seed).second) return false;
  }
  return true;
}

// "name-seed12" -> "name"; any other name unchanged.
std::string without_seed_suffix(const std::string& name) {
  const size_t at = name.rfind("-seed");
  if (at == std::string::npos || at + 5 == name.size()) return name;
  for (size_t i = at + 5; i < name.size(); ++i)
    if (name[i] < '0' || name[i] > '9') return name;
  return name.substr(0, at);
}

SeedGroup make_group(std::vector<const RunRecord*> members) {
  std::sort(members.begin(), members.end(),
            [](const RunRecord* a, const RunRecord* b) { return a->name < b->name; });
  SeedGroup g;
  g.runs = std::move(members);
  g.standing = standing_of(g.first());
  std::vector<double> valid, test;
  std::set<long long> horizons;
  bool horizon_missing = false;
  for (const auto* r : g.runs) {
    g.label += (g.label.empty() ? "" : ", ") + r->name;
    if (r->seed) g.seeds.push_back(*r->seed);
    const bool leaky = g.standing == Standing::kQuarantined;
    const auto& v = leaky ? r->quarantined_best_valid_ppl : r->best_valid_ppl;
    const auto& t = leaky ? r->quarantined_test_ppl : r->test_ppl;
    if (g.standing != Standing::kUnaudited) {
      if (v) valid.push_back(*v);
      if (t) test.push_back(*t);
    }
    if (r->audit.leak_horizon) {
      horizons.insert(*r->audit.leak_horizon);
    } else {
      horizon_missing = true;
    }
  }
  g.valid = mean_std(valid);
  g.test = mean_std(test);
  std::set<std::string> stems;
  for (const auto* r : g.runs) stems.insert(without_seed_suffix(r->name));
  g.short_label = stems.size() == 1 ? *stems.begin() : g.label;
  if (!horizon_missing && horizons.size() == 1) g.leak_horizon = *horizons.begin();
  return g;
}

std::string pooled_cell(const SeedGroup& g, const MeanStd& m) {
  switch (g.standing) {
    case Standing::kValid:
      return m.n ? fmt_mean_std_ppl(m) : "not recorded";
    case Standing::kQuarantined:
      if (!m.n) return "QUARANTINED (LEAKY), none recorded";
      return quarantined_text(fmt_mean_std_ppl(m), g.leak_horizon);
    case Standing::kUnaudited:
      break;
  }
  return "withheld (not audited)";
}

}  // namespace

std::vector<SeedGroup> seed_groups(const std::vector<RunRecord>& runs) {
  // (standing, config) -> members; std::map keeps the grouping deterministic.
  std::map<std::pair<int, std::string>, std::vector<const RunRecord*>> by_key;
  for (const auto& r : runs) {
    if (r.task != "lm") continue;
    by_key[{static_cast<int>(standing_of(r)), r.config_key}].push_back(&r);
  }
  std::vector<SeedGroup> out;
  for (auto& [key, members] : by_key) {
    if (members.size() > 1 && distinct_seeds(members)) {
      out.push_back(make_group(members));
    } else {
      for (const auto* r : members) out.push_back(make_group({r}));
    }
  }
  std::sort(out.begin(), out.end(),
            [](const SeedGroup& a, const SeedGroup& b) { return a.first().name < b.first().name; });
  return out;
}

std::vector<EpochStat> group_curve(const SeedGroup& g) {
  std::map<std::pair<double, bool>, std::vector<double>> at;
  for (const auto* r : g.runs) {
    for (const auto& p : r->evals) at[{p.epoch, p.quarantined}].push_back(p.ppl);
  }
  std::vector<EpochStat> out;
  for (const auto& [key, values] : at) out.push_back({key.first, mean_std(values), key.second});
  return out;
}

std::string group_valid_cell(const SeedGroup& g) {
  return g.pooled() ? pooled_cell(g, g.valid) : valid_ppl_cell(g.first());
}

std::string group_test_cell(const SeedGroup& g) {
  return g.pooled() ? pooled_cell(g, g.test) : test_ppl_cell(g.first());
}

std::string seeds_cell(const SeedGroup& g) {
  if (!g.pooled()) return g.first().seed ? std::to_string(*g.first().seed) : "not recorded";
  return fmt_offsets(g.seeds) + " (n=" + std::to_string(g.runs.size()) + ")";
}

}  // namespace grassaudit
