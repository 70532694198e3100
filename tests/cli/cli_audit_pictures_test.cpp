// Pictures of an audit: --leak-map FILE.svg|png and --report DIR draw the leak map with the
// report's own figure code, as valid images of the report's size (800 x 560 a panel), the same
// bytes for the same audit; a leaky and a causal control both get one; modes whose maps differ
// get a panel each, and a length or batch violation a panel of its own.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "cli_support.h"

namespace grassaudit::clitest {
namespace {

// Width and height from a PNG's IHDR chunk (big-endian, after the 8-byte signature and the
// chunk's length and type); {0, 0} when the bytes are not a PNG.
std::pair<uint32_t, uint32_t> png_size(const std::string& b) {
  if (b.size() < 24 || b.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0 || b.compare(12, 4, "IHDR") != 0) return {0, 0};
  auto be = [&](size_t at) {
    return (uint32_t(uint8_t(b[at])) << 24) | (uint32_t(uint8_t(b[at + 1])) << 16) | (uint32_t(uint8_t(b[at + 2])) << 8) |
           uint32_t(uint8_t(b[at + 3]));
  };
  return {be(16), be(20)};
}

std::vector<std::string> small_audit(const std::string& mixer) {
  return {"audit", "--mixer", mixer, "--d-model", "16", "--layers", "1", "--heads", "2", "--rank", "4",
          "--vocab-size", "64", "--max-len", "16", "--offsets", "2", "--threads", "1", "--trials", "1", "--no-gradient-check",
          "--mode", "eval"};  // one mode: one map
}

TEST(CliAuditPictures, LeakyAndCausalControlsDrawValidImagesOfTheReportsSize) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  TempDir t;
  Cli cli(t);
  for (const std::string mixer : {"future", "past"}) {
    SCOPED_TRACE(mixer);
    auto args = small_audit(mixer);
    for (const char* ext : {".png", ".svg"}) {
      auto with = args;
      with.insert(with.end(), {"--leak-map", t.file(mixer + ext)});
      const auto r = cli.run(with);
      ASSERT_EQ(r.status, mixer == "future" ? 1 : 0) << show(r);
    }
    EXPECT_EQ(png_size(read_text(t.file(mixer + ".png"))), (std::pair<uint32_t, uint32_t>{800, 560}));
    const std::string svg = read_text(t.file(mixer + ".svg"));
    EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
    EXPECT_NE(svg.find("width=\"800\" height=\"560\""), std::string::npos);
    EXPECT_NE(svg.find("</svg>"), std::string::npos) << "a whole SVG";
    EXPECT_NE(svg.find(mixer == "future" ? "LEAKY" : "CAUSAL"), std::string::npos) << "the verdict in the title";
    // The same audit (same seed and thread count) draws the same bytes.
    auto again = args;
    again.insert(again.end(), {"--leak-map", t.file(mixer + "-again.svg")});
    cli.run(again);
    EXPECT_EQ(read_text(t.file(mixer + "-again.svg")), svg);
  }
}

TEST(CliAuditPictures, ModesLengthAndBatchViolationsGetPanelsOfTheirOwn) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  TempDir t;
  Cli cli(t);
  const std::string audits = std::string(GRASSAUDIT_SOURCE_DIR) + "/audits/";
  struct Case {
    std::string model, mode;
    uint32_t panels;  // 800 pixels wide each
    const char* why;
  };
  for (const auto& c : std::vector<Case>{
           {"controls/length_normalised_position.pt", "eval", 2, "the map and the length panel"},
           {"controls/batch_mean_centering.pt", "eval", 2, "the map and the batch panel"},
           {"soundness/conv_batchnorm.pt", "both", 3, "eval's map, train's map (it leaks there), the batch panel"}}) {
    SCOPED_TRACE(c.model);
    const auto r = cli.run({"audit", "--model", audits + c.model, "--input", "features:4", "--seq-len", "32", "--mode",
                            c.mode, "--threads", "1", "--trials", "1", "--leak-map", t.file("panels.png")});
    ASSERT_EQ(r.status, 1) << show(r);
    EXPECT_EQ(png_size(read_text(t.file("panels.png"))), (std::pair<uint32_t, uint32_t>{800 * c.panels, 560})) << c.why;
  }
}

TEST(CliAuditPictures, ReportWritesOnePageWithThePictures) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  TempDir t;
  Cli cli(t);
  auto args = small_audit("future");
  args.insert(args.end(), {"--report", t.file("page")});
  const auto r = cli.run(args);
  ASSERT_EQ(r.status, 1) << show(r);
  const std::string md = read_text(t.file("page/README.md"));
  for (const char* needle : {"# Audit: ", "**LEAKY**", "![leak map](leakmap.svg)", "## The contract", "## Checks",
                             "| future |", "## Evidence", "| future | y_", "## Summary"})
    EXPECT_NE(md.find(needle), std::string::npos) << needle << " not in\n" << md;
  EXPECT_EQ(png_size(read_text(t.file("page/leakmap.png"))), (std::pair<uint32_t, uint32_t>{800, 560}));
  EXPECT_NE(read_text(t.file("page/leakmap.svg")).find("</svg>"), std::string::npos);
}

}  // namespace
}  // namespace grassaudit::clitest
