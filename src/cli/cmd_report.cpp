// grassaudit report: regenerates reports/README.md and its figures from committed artifacts.
#include <iostream>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "report/report.h"
#include "util/error.h"

namespace grassaudit::cli {

int report_main(int argc, char** argv) {
  return guarded("report", [&]() -> int {
    po::options_description desc("report options");
    ReportOptions o;
    desc.add_options()
        ("runs", po::value<std::string>(&o.runs_dir)->default_value(o.runs_dir), "run artifacts folder")
        ("reference", po::value<std::string>(&o.reference_dir)->default_value(o.reference_dir), "published numbers")
        ("bench", po::value<std::string>(&o.bench_dir)->default_value(o.bench_dir), "benchmark artifacts folder")
        ("out", po::value<std::string>(&o.out_dir)->default_value(o.out_dir), "output folder (README.md, figures/)");
    po::variables_map vm;
    if (!parse(argc, argv, desc, vm, "usage: grassaudit report [--runs DIR] [--reference DIR] [--bench DIR] [--out DIR]"))
      return kExitOk;
    generate_report(o);
    std::cout << "wrote " << o.out_dir << "/README.md\n";
    return kExitOk;
  });
}

}  // namespace grassaudit::cli
