#pragma once
// The one-page README.md: sections (a)-(e) plus run details and throughput.
#include <string>
#include <vector>

#include "report/bench.h"
#include "report/figures/figures.h"
#include "report/published.h"
#include "report/report.h"
#include "report/runs.h"

namespace grassaudit {

std::string render_readme(const ReportOptions& opts, const Published& pub,
                          const std::vector<RunRecord>& runs, const std::vector<BenchPoint>& bench,
                          const FigureResult& figures);

}  // namespace grassaudit
