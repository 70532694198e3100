// The generic field-table machinery (util/config_fields.h, util/config_json.h) on a toy config
// with one field of every kind: the exact wording of every kind of check, and the strict JSON
// reading every real config shares (tests/{core,train,nli}/*config_fields_test.cpp apply the
// same table-driven checks to ModelConfig, TrainConfig, NliConfig and NliTrainConfig).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "support/config_table_checks.h"
#include "util/config_fields.h"
#include "util/config_json.h"
#include "util/error.h"

namespace grassaudit {
namespace {

struct ToyConfig {
  int64_t width = 8;
  int64_t skip = 0;
  uint64_t seed = 1;
  double rate = 0.5;
  double share = 0.5;
  double floor = 1.0;
  double tol = 1e-6;
  double ratio = 1.0;
  std::string mode = "b";
  std::vector<int64_t> steps{1, 2};
};

const std::vector<Field<ToyConfig>>& toy_fields() {
  using C = ToyConfig;
  static const std::vector<Field<C>> fields{
      {"width", &C::width, at_least(1), "width", "the width"},
      {"skip", &C::skip, at_least(0, "0 = none")},
      {"seed", &C::seed, any_value(), "seed", "the seed"},
      {"rate", &C::rate, half_open(0, 1)},
      {"share", &C::share, open_range(0, 1)},
      {"floor", &C::floor, finite_at_least(0, "0 = off")},
      {"tol", &C::tol, finite_above(0)},
      {"ratio", &C::ratio, closed_range(0, 1)},
      {"mode", &C::mode, one_of({"a", "b", "c"}), "mode", "a | b | c"},
      {"steps", &C::steps, non_empty_at_least(1), "steps", "1,2,..."},
  };
  return fields;
}

void validate_toy(const ToyConfig& c) { check_fields(c, toy_fields(), "toy"); }
nlohmann::json toy_to_json(const ToyConfig& c) { return fields_to_json(c, toy_fields()); }
ToyConfig toy_from_json(const nlohmann::json& j) { return fields_from_json(j, toy_fields(), ToyConfig{}, "toy"); }

std::string validation_error(const ToyConfig& c) {
  try {
    validate_toy(c);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

std::string reading_error(const nlohmann::json& j) {
  try {
    toy_from_json(j);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(ConfigFields, MessagesOfEveryKindOfCheck) {
  auto with = [](auto mutate) {
    ToyConfig c;
    mutate(c);
    return validation_error(c);
  };
  EXPECT_EQ(validation_error(ToyConfig{}), "");
  EXPECT_EQ(with([](ToyConfig& c) { c.width = 0; }), "invalid toy config: width must be >= 1, got 0");
  EXPECT_EQ(with([](ToyConfig& c) { c.skip = -1; }), "invalid toy config: skip must be >= 0 (0 = none), got -1");
  EXPECT_EQ(with([](ToyConfig& c) { c.rate = 1; }), "invalid toy config: rate must be in [0, 1), got 1");
  EXPECT_EQ(with([](ToyConfig& c) { c.rate = std::nan(""); }), "invalid toy config: rate must be in [0, 1), got nan");
  EXPECT_EQ(with([](ToyConfig& c) { c.share = 0; }), "invalid toy config: share must be in (0, 1), got 0");
  EXPECT_EQ(with([](ToyConfig& c) { c.floor = -0.5; }),
            "invalid toy config: floor must be finite and >= 0 (0 = off), got -0.5");
  EXPECT_EQ(with([](ToyConfig& c) { c.floor = std::numeric_limits<double>::infinity(); }),
            "invalid toy config: floor must be finite and >= 0 (0 = off), got inf");
  EXPECT_EQ(with([](ToyConfig& c) { c.tol = 0; }), "invalid toy config: tol must be finite and > 0, got 0");
  EXPECT_EQ(with([](ToyConfig& c) { c.ratio = 1.5; }), "invalid toy config: ratio must be in [0, 1], got 1.5");
  EXPECT_EQ(with([](ToyConfig& c) { c.mode = "d"; }), "invalid toy config: mode must be a, b or c, got 'd'");
  EXPECT_EQ(with([](ToyConfig& c) { c.steps = {}; }), "invalid toy config: steps must not be empty");
  EXPECT_EQ(with([](ToyConfig& c) { c.steps = {1, 0}; }), "invalid toy config: steps must be >= 1, got 0");
  // Table order decides which of two bad fields is named.
  EXPECT_EQ(with([](ToyConfig& c) { c.steps = {}; c.width = 0; }), "invalid toy config: width must be >= 1, got 0");
}

TEST(ConfigFields, JsonReadingIsStrictAndOneLine) {
  EXPECT_EQ(reading_error({{"width", 256.5}}), "toy config key 'width' must be an integer, got 256.5");
  EXPECT_EQ(reading_error({{"width", 256.0}}), "toy config key 'width' must be an integer, got 256.0");
  EXPECT_EQ(reading_error({{"width", "8"}}), "toy config key 'width' must be an integer, got \"8\"");
  EXPECT_EQ(reading_error({{"width", nullptr}}), "toy config key 'width' must be an integer, got null");
  EXPECT_EQ(reading_error({{"width", 9223372036854775808ull}}),
            "toy config key 'width' must be an integer below 2^63, got 9223372036854775808");
  EXPECT_EQ(reading_error({{"seed", -1}}), "toy config key 'seed' must be a non-negative integer, got -1");
  EXPECT_EQ(reading_error({{"seed", 1.5}}), "toy config key 'seed' must be a non-negative integer, got 1.5");
  EXPECT_EQ(reading_error({{"rate", "x"}}), "toy config key 'rate' must be a number, got \"x\"");
  EXPECT_EQ(reading_error({{"mode", 3}}), "toy config key 'mode' must be a string, got 3");
  EXPECT_EQ(reading_error({{"steps", 3}}), "toy config key 'steps' must be a list of integers, got 3");
  EXPECT_EQ(reading_error({{"steps", {1, "2"}}}), "toy config key 'steps' must be a list of integers, got [1,\"2\"]");
  EXPECT_EQ(reading_error({{"stpes", {1}}}), "unknown toy config key 'stpes'");
  EXPECT_EQ(reading_error(nlohmann::json::array()), "toy config must be a JSON object");
  // What is accepted: an integer literal for a real, the largest int64 and uint64, negatives.
  ToyConfig c = toy_from_json({{"rate", 0}, {"width", 9223372036854775807ll}, {"skip", -5},
                               {"seed", 18446744073709551615ull}, {"steps", nlohmann::json::array()}});
  EXPECT_EQ(c.rate, 0.0);
  EXPECT_EQ(c.width, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(c.skip, -5);
  EXPECT_EQ(c.seed, std::numeric_limits<uint64_t>::max());
  EXPECT_TRUE(c.steps.empty());  // reading does not validate; validate() says "must not be empty"
}

TEST(ConfigFields, ReadingStartsFromTheBase) {
  ToyConfig base;
  base.width = 99;
  base.mode = "c";
  ToyConfig c = fields_from_json(nlohmann::json{{"mode", "a"}}, toy_fields(), base, "toy");
  EXPECT_EQ(c.width, 99);
  EXPECT_EQ(c.mode, "a");
}

TEST(ConfigFields, TableDrivenChecksOnTheToy) {
  testing::ExpectTableDeclaresEveryMemberOnce(toy_fields());
  testing::ExpectEveryFieldRoundTrips(toy_fields(), toy_to_json, toy_from_json);
  testing::ExpectIntegersRejectFractions(toy_fields(), toy_from_json, "toy");
  testing::ExpectEveryCheckEnforced(toy_fields(), ToyConfig{}, validate_toy, "toy");
}

// The member count the table is compared with is right (it is what catches a forgotten field).
TEST(ConfigFields, AggregateMemberCount) {
  struct Three {
    int64_t a;
    std::string b;
    std::vector<int64_t> c;
  };
  EXPECT_EQ(testing::aggregate_member_count<Three>(), 3u);
  EXPECT_EQ(testing::aggregate_member_count<ToyConfig>(), 10u);
}

}  // namespace
}  // namespace grassaudit
