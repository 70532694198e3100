#pragma once
// The supporting tables: per-run details, per-run provenance and the throughput measurements.
#include <string>
#include <vector>

#include "report/bench.h"
#include "report/runs.h"

namespace grassaudit {

// Our LM runs: test perplexity (under the same quarantine rule), cost and code.
std::string render_run_details(const std::vector<RunRecord>& runs);
// One short sample per valid paper-size LM run (d_model 256): its sample.json (prompt, text,
// settings), or why it has none. "" when there is no such run.
std::string render_samples(const std::vector<RunRecord>& runs);

// Every run (LM and SNLI): which code, machine settings, data and command produced it, and which
// gate wrote its audit.json. A run without provenance is marked as produced by older code.
std::string render_provenance_table(const std::vector<RunRecord>& runs);

std::string render_bench_table(const std::vector<BenchPoint>& bench);
// Says what "threads" means when a measurement does not record the BLAS pool; empty otherwise.
std::string bench_threads_note(const std::vector<BenchPoint>& bench);

}  // namespace grassaudit
