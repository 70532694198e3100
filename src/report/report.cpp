#include "report/report.h"

#include <filesystem>
#include <system_error>

#include "report/bench.h"
#include "report/figure_plan.h"
#include "report/figures/figures.h"
#include "report/published.h"
#include "report/readme.h"
#include "report/runs.h"
#include "util/atomic_file.h"
#include "util/error.h"

namespace grassaudit {

void generate_report(const ReportOptions& opts) {
  // Read and validate every input before writing anything.
  const Published pub = load_published(opts.reference_dir);
  const std::vector<RunRecord> runs = load_runs(opts.runs_dir);
  const std::vector<BenchPoint> bench = load_bench(opts.bench_dir);

  std::error_code ec;
  std::filesystem::create_directories(opts.out_dir, ec);
  if (ec) throw InputError("cannot create " + opts.out_dir + ": " + ec.message());

  const FigureResult figures =
      render_figures(plan_figures(runs, bench, pub), opts.out_dir, opts.gnuplot);
  const std::string readme = render_readme(opts, pub, runs, bench, figures);
  write_file_atomic((std::filesystem::path(opts.out_dir) / "README.md").string(), readme);
}

}  // namespace grassaudit
