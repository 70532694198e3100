// NliConfig's and NliTrainConfig's field tables: every member declared once, every field
// round-trips, 256.5 for an integer field is a one-line error (before the tables both silently
// truncated it to 256), every check is enforced, and the saved SNLI runs' config.json read and
// write back byte for byte.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "nli/nli_config.h"
#include "nli/nli_train_config.h"
#include "support/config_table_checks.h"
#include "util/error.h"

namespace grassaudit {
namespace {

NliConfig model_from_json(const nlohmann::json& j) { return nli_config_from_json(j); }
nlohmann::json model_json(const NliConfig& c) { return to_json(c); }
NliTrainConfig train_from_json(const nlohmann::json& j) { return nli_train_config_from_json(j); }
nlohmann::json train_json(const NliTrainConfig& c) { return to_json(c); }

TEST(NliConfigFields, TablesDeclareEveryMemberOnce) {
  testing::ExpectTableDeclaresEveryMemberOnce(nli_config_fields());
  testing::ExpectTableDeclaresEveryMemberOnce<AdamWTerms>(nli_train_config_fields());
}

TEST(NliConfigFields, EveryFieldRoundTrips) {
  testing::ExpectEveryFieldRoundTrips(nli_config_fields(), model_json, model_from_json);
  testing::ExpectEveryFieldRoundTrips(nli_train_config_fields(), train_json, train_from_json);
}

TEST(NliConfigFields, IntegersRejectFractions) {
  testing::ExpectIntegersRejectFractions(nli_config_fields(), model_from_json, "NLI model");
  testing::ExpectIntegersRejectFractions(nli_train_config_fields(), train_from_json, "NLI train");
}

TEST(NliConfigFields, EveryCheckEnforced) {
  testing::ExpectEveryCheckEnforced(nli_config_fields(), NliConfig{}, [](const NliConfig& c) { c.validate(); },
                                    "NLI model");
  testing::ExpectEveryCheckEnforced(nli_train_config_fields(), NliTrainConfig{},
                                    [](const NliTrainConfig& c) { c.validate(); }, "NLI train");
}

TEST(NliConfigFields, RulesBetweenFields) {
  auto invalid = [](auto mutate) {
    NliConfig c;
    mutate(c);
    try {
      c.validate();
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(invalid([](NliConfig& c) { c.heads = 3; }), "invalid NLI model config: heads (3) must divide d_model (256)");
  EXPECT_EQ(invalid([](NliConfig& c) { c.d_proj = 6; }),
            "invalid NLI model config: d_proj (6) must split into 4 heads of rank >= 2");
  EXPECT_EQ(invalid([](NliConfig& c) { c.stride = 4; }),
            "invalid NLI model config: stride (4) must equal window (8): only non-overlapping windows");
  EXPECT_EQ(invalid([](NliConfig& c) { c.head = "lstm"; }),
            "invalid NLI model config: head must be grassmann or transformer, got 'lstm'");
}

TEST(NliConfigFields, SavedRunConfigsAreByteIdentical) {
  const std::filesystem::path runs = std::filesystem::path(GRASSAUDIT_SOURCE_DIR) / "reports" / "runs";
  int checked = 0;
  for (const char* run : {"snli-grassmann", "snli-transformer"}) {
    const auto path = runs / run / "config.json";
    ASSERT_TRUE(std::filesystem::exists(path)) << "the committed run config " << path << " is missing";
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    const nlohmann::json saved = nlohmann::json::parse(text.str());
    const NliConfig m = model_from_json(saved["model"]);
    const NliTrainConfig t = train_from_json(saved["train"]);
    EXPECT_NO_THROW(m.validate());
    EXPECT_NO_THROW(t.validate());
    EXPECT_EQ(to_json(m).dump(2), saved["model"].dump(2)) << path;
    EXPECT_EQ(to_json(t).dump(2), saved["train"].dump(2)) << path;
    ++checked;
  }
  EXPECT_EQ(checked, 2);
}

}  // namespace
}  // namespace grassaudit
