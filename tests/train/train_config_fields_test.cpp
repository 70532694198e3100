// TrainConfig's field table (train_config_fields): every member declared once, every field
// round-trips, 256.5 for an integer field is a one-line error, every check is enforced, the
// tested messages keep their wording, loss_impl defaults to "fused" when absent (configs and
// checkpoints written before it existed), and a saved run's config.json reads and writes back
// byte for byte apart from the new key.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "support/config_table_checks.h"
#include "train/train_config.h"
#include "util/error.h"

namespace grassaudit {
namespace {

TrainConfig from_json(const nlohmann::json& j) { return train_config_from_json(j); }
nlohmann::json as_json(const TrainConfig& c) { return to_json(c); }

std::string invalid(const std::function<void(TrainConfig&)>& mutate) {
  TrainConfig c;
  mutate(c);
  try {
    c.validate(ModelConfig{});
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(TrainConfigFields, TableDeclaresEveryMemberOnce) {
  testing::ExpectTableDeclaresEveryMemberOnce<AdamWTerms>(train_config_fields());
}

TEST(TrainConfigFields, EveryFieldRoundTrips) {
  testing::ExpectEveryFieldRoundTrips(train_config_fields(), as_json, from_json);
}

TEST(TrainConfigFields, IntegersRejectFractions) {
  testing::ExpectIntegersRejectFractions(train_config_fields(), from_json, "train");
}

TEST(TrainConfigFields, EveryCheckEnforced) {
  testing::ExpectEveryCheckEnforced(train_config_fields(), TrainConfig{},
                                    [](const TrainConfig& c) { c.validate(ModelConfig{}); }, "train");
}

TEST(TrainConfigFields, MessagesKeepTheirWording) {
  EXPECT_EQ(invalid([](TrainConfig& c) { c.epochs = 0; }), "invalid train config: epochs must be >= 1, got 0");
  EXPECT_EQ(invalid([](TrainConfig& c) { c.max_tokens = -1; }),
            "invalid train config: max_tokens must be >= 0 (0 = no limit), got -1");
  EXPECT_EQ(invalid([](TrainConfig& c) { c.seq_len = -1; }),
            "invalid train config: seq_len must be >= 0 (0 = max_len), got -1");
  EXPECT_EQ(invalid([](TrainConfig& c) { c.clip = -1; }),
            "invalid train config: clip must be finite and >= 0 (0 = off), got -1");
  EXPECT_EQ(invalid([](TrainConfig& c) { c.min_lr_ratio = 2; }), "invalid train config: min_lr_ratio must be in [0, 1], got 2");
  EXPECT_EQ(invalid([](TrainConfig& c) { c.tokenizer = "bpe"; }),
            "invalid train config: tokenizer must be word or wordpiece, got 'bpe'");
  EXPECT_EQ(invalid([](TrainConfig& c) { c.loss_impl = "x"; }),
            "invalid train config: loss_impl must be fused or materialized, got 'x'");
  // Rules involving the model, after the table's checks.
  EXPECT_EQ(invalid([](TrainConfig& c) { c.seq_len = 1; }), "invalid train config: seq_len must be >= 2, got 1");
  EXPECT_EQ(invalid([](TrainConfig& c) { c.seq_len = 1024; }), "invalid train config: seq_len 1024 exceeds the model's max_len 128");
  EXPECT_EQ(invalid([](TrainConfig& c) { c.loss_impl = "materialized"; }), "");
}

TEST(TrainConfigFields, LossImplDefaultsToFusedWhenAbsent) {
  nlohmann::json old = to_json(TrainConfig{});
  old.erase("loss_impl");
  TrainConfig base;
  base.loss_impl = "materialized";
  EXPECT_EQ(train_config_from_json(old).loss_impl, "fused");
  EXPECT_EQ(train_config_from_json(old, base).loss_impl, "materialized");  // a key not given keeps the base
  EXPECT_EQ(train_config_from_json({{"loss_impl", "materialized"}}).loss_impl, "materialized");
  EXPECT_THROW(train_config_from_json({{"loss_impl", 1}}), InputError);
}

// The cpu-small runs' config.json files of 2026-11-29 were written before the table (and loss_impl) existed: their
// "train" objects read (loss_impl = fused) and write back to the same bytes plus that one key.
TEST(TrainConfigFields, SavedRunConfigsAreByteIdentical) {
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
    const nlohmann::json saved = nlohmann::json::parse(text.str());
    ASSERT_FALSE(saved["train"].contains("loss_impl"));
    const ModelConfig m = model_config_from_json(saved["model"]);
    const TrainConfig c = from_json(saved["train"]);
    EXPECT_NO_THROW(c.validate(m));
    EXPECT_EQ(c.loss_impl, "fused");
    EXPECT_EQ(c.patience, 0);  // key added with --patience; absent means off
    nlohmann::json written = to_json(c);
    written.erase("loss_impl");
    written.erase("patience");
    EXPECT_EQ(written.dump(2), saved["train"].dump(2)) << path;
    nlohmann::json model_written = to_json(m);
    model_written.erase("norm");  // added with --norm; the runs are post-norm
    const nlohmann::json whole{{"model", model_written}, {"train", written}};
    EXPECT_EQ(whole.dump(2) + "\n", text.str()) << path;
    ++checked;
  }
  EXPECT_EQ(checked, 3);
}

}  // namespace
}  // namespace grassaudit
