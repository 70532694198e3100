#include "report/leak_map_figure.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include <fmt/format.h>

#include "report/gnuplot_script.h"
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
std::string grid_data(const LeakMapPicture& p) {
  const long long L = std::max(2LL, p.seq_len);
  std::vector<double> grid(static_cast<size_t>(L * (L - 1)), std::nan(""));
  auto at = [&](long long t, long long d) -> double& { return grid[static_cast<size_t>(t * (L - 1) + (d - 1))]; };
  for (long long t = 0; t < L; ++t)
    for (long long d = 1; t + d <= L - 1; ++d) at(t, d) = kLogFloor;
  for (const auto& c : p.cells) {
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

}  // namespace

LeakMapPicture leak_map_picture_of_audit(const nlohmann::json& audit, const std::string& stem) {
  const auto lm = audit.find("leak_map");
  if (lm == audit.end() || !lm->is_object() || !lm->value("seq_len", nlohmann::json(0)).is_number_integer())
    throw InputError("the audit has no leak map (its future tables did not run)");
  LeakMapPicture p;
  p.stem = stem;
  p.seq_len = (*lm)["seq_len"].get<long long>();
  if (p.seq_len < 2) throw InputError("the audit's leak map has no length");
  for (const auto& c : lm->value("cells", nlohmann::json::array())) {
    if (!c.is_array() || c.size() != 3 || !c[0].is_number_integer() || !c[1].is_number_integer() || !c[2].is_number())
      throw InputError("a leak map cell is not [t, D, effect]");
    p.cells.push_back({c[0].get<long long>(), c[1].get<long long>(), c[2].get<double>()});
  }
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

void plan_leak_map(const LeakMapPicture& p, FigurePlan& plan) {
  const long long L = std::max(2LL, p.seq_len);
  plan.data_files.emplace_back(p.stem + ".dat", grid_data(p));
  std::string body;
  body += "set title " + gnuplot_quote(p.title) + "\n";
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
  body += "plot " + gnuplot_quote("data/" + p.stem + ".dat") + " using 1:2:3 with image notitle\n";
  plan.script += both_terminals(p.stem, body, 800, 560);
  std::string caption = p.caption.empty()
                            ? "Colour is log10 of the relative change of output y_t when the inputs from position t+D "
                              "on are replaced (black: no change). Blank: no input at t+D."
                            : p.caption;
  if (p.horizon && *p.horizon > 0) caption += " Dashed line: the measured leak horizon.";
  if (p.lookahead > 0) caption += " Dotted line: the declared lookahead (at or below it allowed).";
  if (p.threshold)
    caption += fmt::format(" Decided against the threshold {:.3g}{}.", *p.threshold,
                           std::log10(*p.threshold) > kLogFloor + 0.5 ? " (the tick \"thr\" on the colour bar)"
                                                                      : ", below the colour floor");
  plan.figures.push_back({p.stem, p.title, caption});
}

}  // namespace grassaudit
