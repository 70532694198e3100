#pragma once
// Drawing the planned figures with gnuplot into <out_dir>/figures/.
#include <map>
#include <string>
#include <vector>

#include "report/figure_plan.h"

namespace grassaudit {

struct FigureResult {
  std::vector<Figure> figures;  // those drawn (empty when none planned or not rendered)
  bool rendered = false;        // false: gnuplot missing, nothing drawn
  std::string note;             // why figures are missing, for the README
};

// The plan's pictures drawn in a temporary folder: "<stem>.png" and "<stem>.svg" -> bytes.
// Throws std::runtime_error if gnuplot cannot run or fails.
std::map<std::string, std::string> draw_pictures(const FigurePlan& plan, const std::string& gnuplot);

// Writes the plan's data and script to a temporary folder, runs gnuplot there, then moves each
// picture into <out_dir>/figures/ atomically. Stale ppl, train-loss, leakmap-* and bench
// pictures from earlier runs are removed. When `gnuplot` cannot be found nothing is drawn and
// `note` says so.
// Throws std::runtime_error if gnuplot runs and fails.
FigureResult render_figures(const FigurePlan& plan, const std::string& out_dir,
                            const std::string& gnuplot);

}  // namespace grassaudit
