// ModelConfig's field table (model_config_fields): it declares every member once, every field
// round-trips through JSON, 256.5 for an integer field is a one-line error, every check of the
// table is enforced, the tested messages keep their wording, and a saved run's config.json reads
// and writes back byte for byte.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/model_config.h"
#include "support/config_table_checks.h"
#include "support/test_support_common.h"
#include "util/error.h"

namespace grassaudit {
namespace {

ModelConfig from_json(const nlohmann::json& j) { return model_config_from_json(j); }
nlohmann::json as_json(const ModelConfig& c) { return to_json(c); }

std::string error_of(const std::function<void()>& f) { return ::grassaudit::testing::thrown_message<InputError>(f); }

TEST(ModelConfigFields, TableDeclaresEveryMemberOnce) {
  testing::ExpectTableDeclaresEveryMemberOnce(model_config_fields());
}

TEST(ModelConfigFields, EveryFieldRoundTrips) {
  testing::ExpectEveryFieldRoundTrips(model_config_fields(), as_json, from_json);
}

TEST(ModelConfigFields, IntegersRejectFractions) {
  testing::ExpectIntegersRejectFractions(model_config_fields(), from_json, "model");
  EXPECT_EQ(error_of([] { from_json({{"d_model", 256.5}}); }), "model config key 'd_model' must be an integer, got 256.5");
}

TEST(ModelConfigFields, EveryCheckEnforced) {
  testing::ExpectEveryCheckEnforced(model_config_fields(), ModelConfig{}, [](const ModelConfig& c) { c.validate(); },
                                    "model");
}

// The words tests/cli and users rely on.
TEST(ModelConfigFields, MessagesKeepTheirWording) {
  auto invalid = [](auto mutate) {
    ModelConfig c;
    mutate(c);
    return error_of([&] { c.validate(); });
  };
  EXPECT_EQ(invalid([](ModelConfig& c) { c.d_model = 0; }), "invalid model config: d_model must be >= 1, got 0");
  EXPECT_EQ(invalid([](ModelConfig& c) { c.vocab_size = 1; }), "invalid model config: vocab_size must be >= 2, got 1");
  EXPECT_EQ(invalid([](ModelConfig& c) { c.rank = 1; }),
            "invalid model config: rank must be >= 2 (a 2-plane needs two dimensions), got 1");
  EXPECT_EQ(invalid([](ModelConfig& c) { c.dropout = 1.5; }), "invalid model config: dropout must be in [0, 1), got 1.5");
  EXPECT_EQ(invalid([](ModelConfig& c) { c.eps = -1; }), "invalid model config: eps must be finite and > 0, got -1");
  EXPECT_EQ(invalid([](ModelConfig& c) { c.offsets = {}; }), "invalid model config: offsets must not be empty");
  EXPECT_EQ(invalid([](ModelConfig& c) { c.offsets = {1, 0, 2, 3, 4, 5}; }),
            "invalid model config: offsets must be >= 1, got 0");
  EXPECT_EQ(invalid([](ModelConfig& c) { c.offset_mode = "some"; }),
            "invalid model config: offset_mode must be per-layer or all, got 'some'");
  // The rules between fields, after the table's checks.
  EXPECT_EQ(invalid([](ModelConfig& c) { c.offsets = {1, 2, 4, 8, 12, 128}; }),
            "invalid model config: offset 128 >= max_len 128: it could never pair two positions");
  EXPECT_EQ(invalid([](ModelConfig& c) { c.offsets = {1, 2}; }),
            "invalid model config: offset_mode per-layer needs one offset per layer: 2 offsets for 6 layers");
  EXPECT_EQ(invalid([](ModelConfig& c) { c.mixer = "attention"; c.heads = 3; }),
            "invalid model config: d_model (256) must be divisible by heads (3)");
  EXPECT_NE(invalid([](ModelConfig& c) { c.mixer = "lstm"; }).find("unknown mixer 'lstm'"), std::string::npos);
  // Offsets do not bind an attention model.
  EXPECT_EQ(invalid([](ModelConfig& c) { c.mixer = "attention"; c.max_len = 8; }), "");
}

// The cpu-small runs' config.json files of 2026-11-29 were written before the table (and norm) existed: their "model"
// objects read (norm = post, the paper's) and write back to the same bytes plus that one key.
TEST(ModelConfigFields, SavedRunConfigsAreByteIdentical) {
  // Copies of the cpu-small runs' config.json of 2026-11-29 (reports/runs held them until the
  // seed runs replaced them): configs users wrote before the key existed.
  const std::filesystem::path runs = std::filesystem::path(GRASSAUDIT_SOURCE_DIR) / "tests" / "fixtures" / "old-run-configs";
  int checked = 0;
  for (const char* run : {"cpu-small-wordpiece-attention", "cpu-small-wordpiece-future", "cpu-small-wordpiece-past"}) {
    const auto path = runs / (std::string(run) + ".json");
    ASSERT_TRUE(std::filesystem::exists(path)) << path;
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    const nlohmann::json saved = nlohmann::json::parse(text.str())["model"];
    const ModelConfig c = from_json(saved);
    EXPECT_NO_THROW(c.validate());
    ASSERT_FALSE(saved.contains("norm"));
    EXPECT_EQ(c.norm, "post");
    nlohmann::json written = to_json(c);
    written.erase("norm");
    EXPECT_EQ(written.dump(2), saved.dump(2)) << path;
    ++checked;
  }
  EXPECT_EQ(checked, 3);
}

}  // namespace
}  // namespace grassaudit
