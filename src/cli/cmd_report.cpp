// grassaudit report: regenerates reports/README.md and its figures from committed artifacts.
#include <iostream>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "report/headline.h"
#include "report/report.h"
#include "util/atomic_file.h"
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
        ("out", po::value<std::string>(&o.out_dir)->default_value(o.out_dir), "output folder (README.md, figures/)")
        ("front-page", po::value<std::string>(),
         "a page whose headline block (between <!-- report-headline:begin/end -->) becomes the report's");
    po::variables_map vm;
    if (!parse(argc, argv, desc, vm, "usage: grassaudit report [--runs DIR] [--reference DIR] [--bench DIR] [--out DIR] [--front-page FILE]"))
      return kExitOk;
    std::string front;
    if (vm.count("front-page")) {
      front = vm["front-page"].as<std::string>();
      check_output_path(front, "--front-page");
      if (headline_block(read_file(front)).empty())
        throw InputError(front + ": no headline block (" + kHeadlineBegin + " ... " + kHeadlineEnd + ")");
    }
    generate_report(o);
    std::cout << "wrote " << o.out_dir << "/README.md\n";
    if (!front.empty()) {
      write_file_atomic(front, with_headline(read_file(front), headline_block(read_file(o.out_dir + "/README.md"))));
      std::cout << "wrote the headline into " << front << "\n";
    }
    return kExitOk;
  });
}

}  // namespace grassaudit::cli
