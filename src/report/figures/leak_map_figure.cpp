#include "report/figures/leak_map_figure.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include <fmt/format.h>

#include "report/figures/figures.h"
#include "report/figures/gnuplot_script.h"
#include "util/error.h"

namespace grassaudit {
namespace {

constexpr double kLogFloor = -12.0;  // the colour floor: log10 of the relative effect
constexpr double kLogCeil = 1.0;

std::string upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return s;
}

// The grid gnuplot draws: one line per (t, D), a blank line between t; log10 of the effect
// clamped to the colour range, the floor for a measured zero, NaN (blank) outside the triangle.
std::string grid_data(long long seq_len, const std::vector<LeakCell>& cells) {
  const long long L = std::max(2LL, seq_len);
  std::vector<double> grid(static_cast<size_t>(L * (L - 1)), std::nan(""));
  auto at = [&](long long t, long long d) -> double& { return grid[static_cast<size_t>(t * (L - 1) + (d - 1))]; };
  for (long long t = 0; t < L; ++t)
    for (long long d = 1; t + d <= L - 1; ++d) at(t, d) = kLogFloor;
  for (const auto& c : cells) {
    if (c.t < 0 || c.t >= L || c.d < 1 || c.d > L - 1) continue;
    const double v = c.effect > 0 ? std::min(kLogCeil, std::max(kLogFloor, std::log10(c.effect))) : kLogFloor;
    double& cell = at(c.t, c.d);
    cell = std::isnan(cell) ? v : std::max(cell, v);
  }
  std::string data;
  for (long long t = 0; t < L; ++t) {
    for (long long d = 1; d <= L - 1; ++d) {
      const double v = at(t, d);
      data += std::isnan(v) ? fmt::format("{} {} NaN\n", t, d) : fmt::format("{} {} {:.4f}\n", t, d, v);
    }
    data += "\n";
  }
  return data;
}

std::vector<LeakCell> cells_of(const nlohmann::json& cells) {
  std::vector<LeakCell> out;
  if (!cells.is_array()) throw InputError("a leak map's cells are not a list");
  for (const auto& c : cells) {
    if (!c.is_array() || c.size() != 3 || !c[0].is_number_integer() || !c[1].is_number_integer() || !c[2].is_number())
      throw InputError("a leak map cell is not [t, D, effect]");
    out.push_back({c[0].get<long long>(), c[1].get<long long>(), c[2].get<double>()});
  }
  return out;
}

bool same_cells(const std::vector<LeakCell>& a, const std::vector<LeakCell>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].t != b[i].t || a[i].d != b[i].d || a[i].effect != b[i].effect) return false;
  return true;
}

}  // namespace

LeakMapPicture leak_map_picture_of_audit(const nlohmann::json& audit, const std::string& stem) {
  const auto lm = audit.find("leak_map");
  if (lm == audit.end() || !lm->is_object() || !lm->value("seq_len", nlohmann::json(0)).is_number_integer())
    throw InputError("the audit has no leak map (its future tables did not run)");
  LeakMapPicture p;
  p.stem = stem;
  p.seq_len = (*lm)["seq_len"].get<long long>();
  if (p.seq_len < 2) throw InputError("the audit's leak map has no length");
  p.cells = cells_of(lm->value("cells", nlohmann::json::array()));
  if (lm->contains("by_mode") && (*lm)["by_mode"].is_object()) {
    for (const auto& [mode, cells] : (*lm)["by_mode"].items()) p.modes.emplace_back(mode, cells_of(cells));
    bool all_same = true;
    for (const auto& m : p.modes) all_same = all_same && same_cells(m.second, p.modes.front().second);
    if (all_same) p.modes.clear();  // one map says it all
  }
  if (audit.value("length_dependent", nlohmann::json()) == true && audit.value("length_profile", nlohmann::json()).is_array())
    for (const auto& pe : audit["length_profile"])
      if (pe.is_array() && pe.size() == 2 && pe[0].is_number_integer() && pe[1].is_number())
        p.length_profile.emplace_back(pe[0].get<long long>(), pe[1].get<double>());
  if (audit.value("batch_coupled", nlohmann::json()) == true && audit.value("batch_profile", nlohmann::json()).is_array())
    for (const auto& e : audit["batch_profile"])
      if (e.is_number()) p.batch_profile.push_back(e.get<double>());
  if (audit.contains("leak_horizon") && audit["leak_horizon"].is_number_integer())
    p.horizon = audit["leak_horizon"].get<long long>();
  if (audit.contains("contract") && audit["contract"].is_object())
    p.lookahead = audit["contract"].value("lookahead", 0LL);
  if (audit.contains("threshold") && audit["threshold"].is_number() && audit["threshold"].get<double>() > 0)
    p.threshold = audit["threshold"].get<double>();
  const std::string verdict = audit.value("verdict", std::string("not audited"));
  const std::string target = audit.value("target", std::string("model"));
  p.title = fmt::format("{}: {}{}, L={}", target, upper(verdict),
                        p.horizon ? fmt::format(", leak horizon {}", *p.horizon) : std::string(), p.seq_len);
  return p;
}

namespace {

// The log10 of an effect as the colour scale reads it (0 and below the floor: the floor).
double log_effect(double e) { return e > 0 ? std::min(kLogCeil, std::max(kLogFloor, std::log10(e))) : kLogFloor; }

// One map panel: its data file and commands.
std::string map_panel(const LeakMapPicture& p, const std::string& data, const std::string& title) {
  const long long L = std::max(2LL, p.seq_len);
  std::string body = "unset arrow\nset title " + gnuplot_quote(title) + "\n";
  body += "set xlabel 'output position t (0-based)'\n";
  body += "set ylabel 'distance D (inputs from t+D on replaced)'\n";
  body += fmt::format("set cblabel 'log10 relative change of y_t (floor {:.0f})'\n", kLogFloor);
  body += fmt::format("set xrange [-0.5:{}.5]\nset yrange [0.5:{}.5]\n", L - 1, L - 1);
  body += fmt::format("set cbrange [{:.0f}:{:.0f}]\n", kLogFloor, kLogCeil);
  body += "set palette defined (-12 'black', -8 '#2c115f', -4 '#b63679', -2 '#fb8861', 1 '#fcfdbf')\n";
  if (p.threshold && std::log10(*p.threshold) > kLogFloor + 0.5)  // below the colour floor: the caption says it
    body += fmt::format("set cbtics add ('thr' {:.4f})\n", std::min(kLogCeil, std::log10(*p.threshold)));
  if (p.horizon && *p.horizon > 0)
    body += fmt::format(
        "set arrow 1 from graph 0, first {}.5 to graph 1, first {}.5 nohead dt 2 lw 1.5 lc rgb '#00a0ff' front\n",
        *p.horizon, *p.horizon);
  if (p.lookahead > 0)
    body += fmt::format(
        "set arrow 2 from graph 0, first {}.5 to graph 1, first {}.5 nohead dt 3 lw 1.5 lc rgb '#40d040' front\n",
        p.lookahead, p.lookahead);
  body += "plot " + gnuplot_quote("data/" + data) + " using 1:2:3 with image notitle\n";
  return body;
}

// A profile panel (length or batch): log10 effect by x, the threshold a dashed line.
std::string profile_panel(const LeakMapPicture& p, const std::string& data, const std::string& title,
                          const std::string& xlabel, long long x_lo, long long x_hi) {
  std::string body = "unset arrow\nset title " + gnuplot_quote(title) + "\n";
  body += "set xlabel " + gnuplot_quote(xlabel) + "\nset ylabel 'log10 relative change'\nunset cblabel\n";
  body += fmt::format("set xrange [{}:{}]\nset yrange [{:.0f}:{:.0f}]\n", x_lo, x_hi, kLogFloor, kLogCeil);
  std::string plot = "plot " + gnuplot_quote("data/" + data) + " using 1:2 with linespoints pt 7 ps 0.6 lc rgb '#b63679' notitle";
  if (p.threshold && std::log10(*p.threshold) > kLogFloor + 0.5)  // below the floor: the caption says it
    plot += fmt::format(", {:.4f} with lines dt 2 lc rgb '#00a0ff' title 'threshold'", log_effect(*p.threshold));
  return body + plot + "\n";
}

}  // namespace

void plan_leak_map(const LeakMapPicture& p, FigurePlan& plan) {
  std::vector<std::string> panels;
  const bool alone = p.modes.empty() && p.length_profile.empty() && p.batch_profile.empty();
  if (p.modes.empty()) {
    plan.data_files.emplace_back(p.stem + ".dat", grid_data(p.seq_len, p.cells));
    panels.push_back(map_panel(p, p.stem + ".dat", alone ? p.title : "the leak map"));
  } else {
    for (const auto& [mode, cells] : p.modes) {
      const std::string data = p.stem + "-" + mode + ".dat";
      plan.data_files.emplace_back(data, grid_data(p.seq_len, cells));
      panels.push_back(map_panel(p, data, mode + " mode"));
    }
  }
  if (!p.length_profile.empty()) {
    std::string data;
    long long lo = p.length_profile.front().first, hi = lo;
    for (const auto& [len, e] : p.length_profile) {
      data += fmt::format("{} {:.4f}\n", len, log_effect(e));
      lo = std::min(lo, len), hi = std::max(hi, len);
    }
    plan.data_files.emplace_back(p.stem + "-length.dat", data);
    panels.push_back(profile_panel(p, p.stem + "-length.dat", "length: y_t of a prefix run alone vs the full run",
                                   "prefix length p (the largest change over t < p)", lo - 1, hi + 1));
  }
  if (!p.batch_profile.empty()) {
    std::string data;
    for (size_t t = 0; t < p.batch_profile.size(); ++t) data += fmt::format("{} {:.4f}\n", t, log_effect(p.batch_profile[t]));
    plan.data_files.emplace_back(p.stem + "-batch.dat", data);
    panels.push_back(profile_panel(p, p.stem + "-batch.dat", "batch: a kept row's y_t when the other rows change",
                                   "output position t (0-based)", -1, static_cast<long long>(p.batch_profile.size())));
  }
  std::string body;
  if (panels.size() == 1) {
    body = panels.front();
  } else {
    body = fmt::format("set multiplot layout 1,{} title {}\n", panels.size(), gnuplot_quote(p.title));
    for (const auto& panel : panels) body += panel;
    body += "unset multiplot\n";
  }
  plan.script += both_terminals(p.stem, body, 800 * static_cast<int>(panels.size()), 560);
  std::string caption = p.caption.empty()
                            ? "Colour is log10 of the relative change of output y_t when the inputs from position t+D "
                              "on are replaced (black: no change). Blank: no input at t+D."
                            : p.caption;
  if (!p.modes.empty()) caption += " One map per mode: the modes' maps differ.";
  if (p.horizon && *p.horizon > 0) caption += " Dashed line: the measured leak horizon.";
  if (p.lookahead > 0) caption += " Dotted line: the declared lookahead (at or below it allowed).";
  if (p.threshold)
    caption += fmt::format(" Decided against the threshold {:.3g}{}.", *p.threshold,
                           std::log10(*p.threshold) > kLogFloor + 0.5 ? " (the tick \"thr\" on the colour bar)"
                                                                      : ", below the colour floor");
  if (!p.length_profile.empty())
    caption += " The length panel: the largest change of y_t computed from a prefix alone, by prefix length.";
  if (!p.batch_profile.empty())
    caption += " The batch panel: the largest change of a kept row's y_t when the other rows of its batch change.";
  plan.figures.push_back({p.stem, p.title, caption});
}

std::string draw_leak_map(const nlohmann::json& audit, const std::string& ext, const std::string& gnuplot) {
  FigurePlan plan;
  plan_leak_map(leak_map_picture_of_audit(audit, "leakmap"), plan);
  return draw_pictures(plan, gnuplot).at("leakmap." + ext);
}

}  // namespace grassaudit
