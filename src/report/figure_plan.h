#pragma once
// What to draw: gnuplot data files and one script, built from the artifacts without touching
// the disk. Paths in the script are relative: data under "data/", pictures under "out/".
#include <string>
#include <utility>
#include <vector>

#include "report/bench.h"
#include "report/published.h"
#include "report/runs.h"

namespace grassaudit {

struct Figure {
  std::string stem;  // pictures are figures/<stem>.png and figures/<stem>.svg
  std::string title;
  std::string caption;
};

struct FigurePlan {
  std::vector<Figure> figures;
  std::vector<std::pair<std::string, std::string>> data_files;  // (name under data/, contents)
  std::string script;                                            // gnuplot commands
};

// Figures: validation perplexity per epoch (runs with eval records), the learning curves of runs
// trained to their best epoch beside the reproductions' published per-epoch points, training loss
// per logged step (LM runs with train records; leaky runs dashed), one leak map per run whose audit.json
// has one, tokens/s vs sequence length per mixer (bench points).
FigurePlan plan_figures(const std::vector<RunRecord>& runs, const std::vector<BenchPoint>& bench,
                        const Published& pub);

}  // namespace grassaudit
