#include "util/json_fields.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "support/test_support_common.h"
#include "util/error.h"

namespace grassaudit {
namespace {

using nlohmann::json;

std::string read_error(const std::function<void()>& read) { return ::grassaudit::testing::thrown_message<InputError>(read); }

TEST(JsonFields, ChoiceIsEmptyWhenAbsentAndNamesTheChoicesOtherwise) {
  const json j{{"norm", "pre"}, {"split", "dev"}, {"mode", nullptr}, {"basis", "stated"}};
  EXPECT_EQ(opt_choice(j, "norm", "f.json", {"pre", "post"}), "pre");
  EXPECT_EQ(opt_choice(j, "mode", "f.json", {"per-layer", "all"}), "");
  EXPECT_EQ(opt_choice(j, "absent", "f.json", {"per-layer", "all"}), "");
  EXPECT_EQ(read_error([&] { opt_choice(j, "split", "f.json (x[0])", {"valid", "test"}); }),
            "f.json (x[0]): 'split' must be \"valid\", \"test\" or null");
  EXPECT_EQ(read_error([&] { opt_choice(j, "basis", "f.json", {"default"}); }),
            "f.json: 'basis' must be \"default\" or null");
  EXPECT_EQ(read_error([&] { opt_choice(json{{"norm", 1}}, "norm", "f.json", {"pre"}); }),
            "f.json: 'norm' must be a string");
}

TEST(JsonFields, RequiredValuesNameTheMissingKey) {
  const json j{{"steps", 12}, {"dirty", false}, {"name", "x"}};
  EXPECT_EQ(req_integer(j, "steps", "p"), 12);
  EXPECT_FALSE(req_bool(j, "dirty", "p"));
  EXPECT_EQ(req_string(j, "name", "p"), "x");
  EXPECT_EQ(read_error([&] { req_integer(j, "threads", "p: provenance"); }), "p: provenance: missing 'threads'");
  EXPECT_EQ(read_error([&] { req_bool(j, "git_dirty", "p"); }), "p: missing 'git_dirty'");
  EXPECT_EQ(read_error([&] { req_bool(j, "steps", "p"); }), "p: 'steps' must be true or false");
  EXPECT_EQ(read_error([&] { req_integer(json{{"n", 1.5}}, "n", "p"); }), "p: 'n' must be an integer");
}

}  // namespace
}  // namespace grassaudit
