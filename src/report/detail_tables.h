#pragma once
// The supporting tables: per-run details and the throughput measurements.
#include <string>
#include <vector>

#include "report/bench.h"
#include "report/runs.h"

namespace grassaudit {

// Our LM runs: test perplexity (under the same quarantine rule), cost and provenance.
std::string render_run_details(const std::vector<RunRecord>& runs);

std::string render_bench_table(const std::vector<BenchPoint>& bench);

}  // namespace grassaudit
