// Inputs found by the libFuzzer targets (scripts/fuzz/), kept as regression tests.
#include <gtest/gtest.h>

#include <string>

#include "test_support.h"
#include "text/snli.h"
#include "util/error.h"

namespace grassaudit {
namespace {

using testing::TempDir;

// fuzz_snli: a JSON number too large for any C++ type made nlohmann::json throw out_of_range
// (not parse_error), which escaped read_snli as a non-InputError: the CLI printed the library's
// message without the file or line. It must be "<path>: line N: not JSON ...", in one short line.
TEST(FuzzRegressions, SnliHugeNumberIsNotJsonWithFileAndLine) {
  TempDir t;
  const std::string good = R"({"gold_label": "neutral", "sentence1": "a", "sentence2": "b"})";
  const std::string huge = "{\"gold_label\": " + std::string(400, '3') + "}";
  try {
    read_snli(t.write("huge.jsonl", good + "\n" + huge + "\n"));
    FAIL() << "no error";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("huge.jsonl: line 2: not JSON"), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    EXPECT_LT(what.size(), 400u) << what;
  }
}

}  // namespace
}  // namespace grassaudit
