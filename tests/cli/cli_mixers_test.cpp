// grassaudit mixers and params read the registry: every mixer with its family, pairing and
// readable reference; the params table names families, not mixer strings.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "cli_support.h"

namespace grassaudit::clitest {
namespace {

TEST(CliMixers, ListsFamilyPairingAndReference) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  TempDir t;
  Cli cli(t);
  auto r = cli.run({"mixers"});
  ASSERT_EQ(r.status, 0) << r.err;
  auto row = [&](const std::string& name) {
    std::istringstream in(r.out);
    std::string line;
    while (std::getline(in, line))
      if (line.rfind(name + " ", 0) == 0) return line;
    return std::string();
  };
  auto words = [](const std::string& line) {
    std::istringstream in(line);
    std::vector<std::string> w;
    std::string x;
    while (in >> x && w.size() < 4) w.push_back(x);
    return w;
  };
  EXPECT_EQ(words(row("future")), (std::vector<std::string>{"future", "grassmann", "future", "literal-future"}));
  EXPECT_EQ(words(row("past")), (std::vector<std::string>{"past", "grassmann", "past", "literal-past"}));
  EXPECT_EQ(words(row("attention")),
            (std::vector<std::string>{"attention", "attention", "causal-mask", "literal-attention"}));
  EXPECT_EQ(words(row("literal-attention")),
            (std::vector<std::string>{"literal-attention", "attention", "causal-mask", "-"}));
}

TEST(CliMixers, ParamsNamesFamilies) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  TempDir t;
  Cli cli(t);
  auto r = cli.run({"params"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("grassmann       6     128     12607168"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("attention       6     128     12585472"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace grassaudit::clitest
