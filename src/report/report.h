#pragma once
// `grassaudit report`: one Markdown page (out_dir/README.md) plus the figures it links
// (out_dir/figures/*.png, *.svg), built from the run artifacts, the published numbers and the
// throughput measurements. Byte-identical output for identical inputs: no timestamps, sorted
// inputs, fixed number formats, deterministic gnuplot terminals.
#include <string>

namespace grassaudit {

struct ReportOptions {
  std::string runs_dir = "reports/runs";     // <run>/summary.json, metrics.jsonl, audit.json
  std::string reference_dir = "reference";   // published/paper.json, published/reproductions.json
  std::string out_dir = "reports";           // README.md and figures/
  std::string bench_dir = "reports/bench";   // *.json throughput measurements (optional)
  std::string gnuplot = "gnuplot";           // program used for figures; missing -> no figures
};

// Throws InputError (naming the file) for a malformed or unreadable artifact, including a
// leaky run that carries a plain perplexity key. Throws std::runtime_error if gnuplot fails.
void generate_report(const ReportOptions& opts);

}  // namespace grassaudit
