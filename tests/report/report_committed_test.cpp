// The committed report is what the committed sources generate: reports/README.md and the SVG
// figures, regenerated from reports/runs, reference/ and reports/bench into a scratch folder,
// equal byte for byte. A run, a published number or the generator changed without
// `scripts/regenerate-reports.sh` fails here, so the report never says what its sources do not.
#include <gtest/gtest.h>

#include <string>

#include "report/report.h"
#include "report_test_util.h"

namespace grassaudit {
namespace {

namespace fs = std::filesystem;

TEST(CommittedReport, IsWhatTheCommittedSourcesGenerate) {
  const fs::path repo = GRASSAUDIT_SOURCE_DIR;
  testing::ScratchDir out;
  ReportOptions o;  // the defaults are the paths scripts/regenerate-reports.sh uses, relative to the repo
  o.out_dir = out.path().string();
  {
    // The report names its sources as given: generate from the repository root, as the script does.
    const fs::path here = fs::current_path();
    fs::current_path(repo);
    try {
      generate_report(o);
    } catch (...) {
      fs::current_path(here);
      throw;
    }
    fs::current_path(here);
  }
  const auto fresh = testing::tree_contents(out.path());
  ASSERT_TRUE(fresh.count("README.md"));
  const std::string hint = " (run scripts/regenerate-reports.sh and commit the result)";
  EXPECT_TRUE(fresh.at("README.md") == testing::read_text(repo / "reports" / "README.md"))
      << "reports/README.md is not what its sources generate" << hint;
  int svgs = 0;
  for (const auto& [name, bytes] : fresh) {
    if (name.size() < 4 || name.compare(name.size() - 4, 4, ".svg") != 0) continue;
    ++svgs;
    const fs::path committed = repo / "reports" / name;
    ASSERT_TRUE(fs::exists(committed)) << "reports/" << name << " is not committed" << hint;
    EXPECT_TRUE(bytes == testing::read_text(committed)) << "reports/" << name << " differs" << hint;
  }
  EXPECT_GE(svgs, 3);
}

}  // namespace
}  // namespace grassaudit
