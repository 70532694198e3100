#pragma once
// One leak map as a picture, for a run of the report and for any audit (grassaudit audit
// --leak-map FILE.svg|png, --report DIR, the Python package's Report.plot): the same gnuplot
// script for both. Colour is log10 of the relative change of output y_t when the inputs from
// t + D on are replaced, by output position t (x) and distance D (y); black is no change; blank
// is a (t, D) with no input at t + D. A panel per mode where the modes' maps differ, and a panel
// for a length or batch violation (the effect by prefix length, by position). The measured leak horizon is a dashed line, a declared
// lookahead a dotted one (at or below it the contract allows the effect), the threshold the
// audit decided against a tick on the colour bar.
#include <optional>
#include <utility>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/figure_plan.h"
#include "report/runs.h"

namespace grassaudit {

struct LeakMapPicture {
  std::string stem;   // out/<stem>.{png,svg}
  std::string title;
  long long seq_len = 0;        // L: every (t, D) with t + D <= L - 1 was measured
  std::vector<LeakCell> cells;  // the non-zero effects; a measured cell not listed changed by 0
  std::optional<long long> horizon;
  long long lookahead = 0;
  std::optional<double> threshold;
  std::string caption;  // what the picture shows, for a page that embeds it
  // One map per mode where the modes' maps differ (mode name, its non-zero cells): a panel each.
  // Empty: one map (the cells above, the largest over the modes).
  std::vector<std::pair<std::string, std::vector<LeakCell>>> modes;
  // A length violation: (prefix length p, effect of y_t from the prefix alone); a batch
  // violation: the effect on a kept row's y_t at each position t. A panel each when non-empty.
  std::vector<std::pair<long long, double>> length_profile;
  std::vector<double> batch_profile;
};

// An audit's JSON (to_json: leak_map, leak_horizon, contract, threshold, verdict, target) as a
// picture. InputError when it has no leak map (an audit that did not run the future tables).
LeakMapPicture leak_map_picture_of_audit(const nlohmann::json& audit, const std::string& stem);

// Adds the picture's data file, script and figure to the plan.
void plan_leak_map(const LeakMapPicture& picture, FigurePlan& plan);

// An audit's leak map drawn by `gnuplot` as `ext` ("svg" or "png"): the picture's bytes. What
// `audit --leak-map FILE` and the Python package's Report.plot write. InputError as
// leak_map_picture_of_audit; std::runtime_error if gnuplot fails.
std::string draw_leak_map(const nlohmann::json& audit, const std::string& ext, const std::string& gnuplot);

}  // namespace grassaudit
