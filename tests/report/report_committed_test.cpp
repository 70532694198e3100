// The committed report is what the committed sources generate: reports/README.md and the SVG
// figures, regenerated from reports/runs, reference/ and reports/bench into a scratch folder,
// equal byte for byte. A run, a published number or the generator changed without
// `scripts/regenerate-reports.sh` fails here, so the report never says what its sources do not.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "report/headline.h"
#include "report/report.h"
#include "report_test_util.h"

namespace grassaudit {
namespace {

namespace fs = std::filesystem;

// "GNUPLOT 5.4 patchlevel 4": the gnuplot that drew an SVG (its <desc>), "" if it names none.
std::string svg_producer(const std::string& svg) {
  const std::string tag = "<desc>Produced by ";
  const auto b = svg.find(tag);
  if (b == std::string::npos) return "";
  const auto e = svg.find("</desc>", b);
  return e == std::string::npos ? "" : svg.substr(b + tag.size(), e - b - tag.size());
}

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
    const std::string old = testing::read_text(committed);
    // Another gnuplot draws the same plot with other bytes (Debian 13's 6.0 against Debian 12's
    // 5.4, which drew the committed figures): then the figure must exist and be a whole SVG, and
    // the README (the numbers) is still compared byte for byte above.
    if (svg_producer(bytes) != svg_producer(old)) {
      std::printf("reports/%s: drawn by %s here, committed by %s: not compared byte for byte\n", name.c_str(),
                  svg_producer(bytes).c_str(), svg_producer(old).c_str());
      EXPECT_EQ(bytes.rfind("<?xml", 0), 0u) << name;
      EXPECT_NE(bytes.find("</svg>"), std::string::npos) << name;
      continue;
    }
    EXPECT_TRUE(bytes == old) << "reports/" << name << " differs" << hint;
  }
  EXPECT_GE(svgs, 3);
}

// The front page's headline is the report's, byte for byte (scripts/regenerate-reports.sh copies
// it): the top README never shows a number the report does not.
TEST(CommittedReport, FrontPageHeadlineIsTheReports) {
  const fs::path repo = GRASSAUDIT_SOURCE_DIR;
  const std::string report = headline_block(testing::read_text(repo / "reports" / "README.md"));
  const std::string front = headline_block(testing::read_text(repo / "README.md"));
  ASSERT_FALSE(report.empty()) << "reports/README.md has no headline block";
  EXPECT_EQ(front, report) << "README.md's headline is not the report's (run scripts/regenerate-reports.sh)";
}

}  // namespace
}  // namespace grassaudit
