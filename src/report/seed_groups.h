#pragma once
// Runs that differ only by their seed (equal RunRecord::config_key, same audit standing, distinct
// recorded seeds) are one setting measured several times: the report shows their mean ± sample
// standard deviation instead of picking one. Every other run is a group of one.
#include <optional>
#include <string>
#include <vector>

#include "report/runs.h"
#include "report/stats.h"

namespace grassaudit {

struct SeedGroup {
  std::vector<const RunRecord*> runs;  // sorted by run name; never empty
  Standing standing = Standing::kUnaudited;
  std::string label;                   // "a" or "a, b, c"
  // For a legend: the members' common name when each is <name>-seed<N> ("a-seed1, a-seed2" -> "a"),
  // else `label`.
  std::string short_label;
  std::vector<long long> seeds;        // the members' seeds, in member order (may be empty)
  // Best validation and test perplexity over the members: plain values for causal groups,
  // the quarantined values for leaky ones, nothing for unaudited ones.
  MeanStd valid, test;
  std::optional<long long> leak_horizon;  // shared by every leaky member, else nullopt

  const RunRecord& first() const { return *runs.front(); }
  bool pooled() const { return runs.size() > 1; }
};

// Language-model runs only, in the order of their first member's name.
std::vector<SeedGroup> seed_groups(const std::vector<RunRecord>& runs);

// One point of a group's validation curve: the members' perplexities at that epoch.
struct EpochStat {
  double epoch = 0;
  MeanStd ppl;
  bool quarantined = false;
};
std::vector<EpochStat> group_curve(const SeedGroup& g);

// Cells: the validation / test perplexity under the quarantine rule, and the seeds.
std::string group_valid_cell(const SeedGroup& g);
std::string group_test_cell(const SeedGroup& g);
std::string seeds_cell(const SeedGroup& g);  // "1234", "1,2,3 (n=3)", "not recorded"

}  // namespace grassaudit
