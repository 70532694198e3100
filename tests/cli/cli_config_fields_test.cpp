// The config flags generated from the field tables (cli/cli_common.h: add_config_flags /
// apply_config_flags) as a user meets them: 256.5 for an integer flag or config-file key is one
// error line and exit 2 in train and train-nli alike; --loss-impl is checked (allowed with --resume:
// the same function, rounded differently); every table flag is listed by --help; flags given land in
// the saved config.json, which reads back (as --config) to the same bytes.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_support.h"

namespace grassaudit::clitest {
namespace {

std::vector<std::string> tiny_train(const TempDir& t, std::vector<std::string> extra) {
  std::vector<std::string> a{"train", "--mixer", "past", "--preset", "tiny", "--out", t.file("run"), "--data-dir",
                             t.file("none"), "--threads", "1"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

TEST(CliConfigFields, FractionalIntegersAreOneLineErrors) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  TempDir t;
  Cli cli(t);
  struct Case {
    std::vector<std::string> args;
    std::vector<std::string> needles;
  };
  write_text(t.file("model.json"), R"({"model": {"d_model": 256.5}})");
  write_text(t.file("train.json"), R"({"train": {"batch": 256.5}})");
  write_text(t.file("seed.json"), R"({"train": {"seed": 1.5}})");
  write_text(t.file("offsets.json"), R"({"model": {"offsets": [1, 2.5]}})");
  const std::vector<Case> cases{
      {tiny_train(t, {"--d-model", "256.5"}), {"--d-model", "256.5"}},
      {tiny_train(t, {"--epochs", "1.5"}), {"--epochs", "1.5"}},
      {tiny_train(t, {"--max-tokens", "1e3"}), {"--max-tokens", "1e3"}},
      {tiny_train(t, {"--offsets", "1,2.5"}), {"--offsets", "1,2.5"}},
      {{"train", "--mixer", "past", "--config", t.file("model.json")},
       {"model.json", "model config key 'd_model' must be an integer, got 256.5"}},
      {{"train", "--mixer", "past", "--config", t.file("train.json")},
       {"train.json", "train config key 'batch' must be an integer, got 256.5"}},
      {{"train", "--mixer", "past", "--config", t.file("seed.json")},
       {"seed.json", "train config key 'seed' must be a non-negative integer, got 1.5"}},
      {{"train", "--mixer", "past", "--config", t.file("offsets.json")},
       {"offsets.json", "model config key 'offsets' must be a list of integers, got [1,2.5]"}},
      {{"train-nli", "--head", "grassmann", "--encoder-layers", "1.5"}, {"--encoder-layers", "1.5"}},
      {{"train-nli", "--head", "grassmann", "--batch", "256.5"}, {"--batch", "256.5"}},
  };
  for (const auto& c : cases) {
    std::string shown;
    for (const auto& a : c.args) shown += a + " ";
    SCOPED_TRACE(shown);
    auto r = cli.run(c.args, 30);
    EXPECT_TRUE(IsOneLineError(r, c.args[0], c.needles));
  }
  EXPECT_FALSE(fs::exists(t.file("run")));
}

TEST(CliConfigFields, ValuesAreCheckedByTheTable) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  TempDir t;
  Cli cli(t);
  struct Case {
    std::vector<std::string> args;
    std::vector<std::string> needles;
  };
  const std::vector<Case> cases{
      {tiny_train(t, {"--loss-impl", "x"}), {"invalid train config: loss_impl must be fused or materialized, got 'x'"}},
      {tiny_train(t, {"--d-model", "0"}), {"invalid model config: d_model must be >= 1, got 0"}},
      {{"train", "--resume", t.file("x.ckpt"), "--loss-impl", "bogus"},
       {"invalid train config: loss_impl must be fused or materialized, got 'bogus'"}},
      {{"train", "--resume", t.file("x.ckpt"), "--tokenizer", "word"}, {"--tokenizer cannot be combined with --resume"}},
      {{"train-nli", "--head", "lstm"}, {"invalid NLI model config: head must be grassmann or transformer, got 'lstm'"}},
      {{"train-nli", "--head", "grassmann", "--lr", "nan"}, {"invalid NLI train config: lr must be finite and > 0, got nan"}},
      {{"train-nli", "--head", "grassmann", "--encoder-layers", "-1"},
       {"invalid NLI model config: encoder_layers must be >= 0, got -1"}},
      {{"train-nli", "--resume", t.file("x.ckpt"), "--encoder-layers", "2"},
       {"--encoder-layers cannot be combined with --resume"}},
  };
  for (const auto& c : cases) {
    std::string shown;
    for (const auto& a : c.args) shown += a + " ";
    SCOPED_TRACE(shown);
    auto r = cli.run(c.args, 30);
    EXPECT_TRUE(IsOneLineError(r, c.args[0], c.needles));
  }
}

TEST(CliConfigFields, HelpListsEveryTableFlag) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  TempDir t;
  Cli cli(t);
  const std::vector<std::pair<std::string, std::vector<std::string>>> expected{
      {"train",
       {"--tokenizer", "--epochs", "--seed", "--max-tokens", "--audit-trials", "--loss-impl", "--vocab-size",
        "--d-model", "--rank", "--layers", "--max-len", "--heads", "--d-ff", "--dropout", "--eps", "--offsets",
        "--offset-mode"}},
      {"train-nli", {"--head", "--encoder-layers", "--epochs", "--batch", "--lr", "--log-every", "--max-examples"}},
      {"audit", {"--d-model", "--offsets", "--offset-mode"}},
  };
  for (const auto& [cmd, flags] : expected) {
    auto r = cli.run({cmd, "--help"});
    ASSERT_EQ(r.status, 0) << show(r);
    for (const auto& f : flags) EXPECT_NE(r.out.find(f + " "), std::string::npos) << cmd << " --help lacks " << f;
  }
}

// Flags reach the saved config.json; that file, given back as --config, resolves to the same bytes.
TEST(CliConfigFields, FlagsLandInConfigJsonWhichReadsBack) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  TempDir t;
  Cli cli(t);
  make_fake_data(t.file("data"));
  const std::vector<std::string> common{"--data-dir", t.file("data"), "--allow-other-data", "--threads", "1"};
  std::vector<std::string> a{"train", "--mixer", "past", "--preset", "tiny", "--out", t.file("a"), "--tokenizer",
                             "word", "--d-model", "24", "--rank", "3", "--heads", "3", "--offsets", "1,3",
                             "--epochs", "2", "--seed", "77", "--audit-trials", "2", "--max-tokens", "64",
                             "--loss-impl", "materialized"};
  a.insert(a.end(), common.begin(), common.end());
  auto r = cli.run(a, 120);
  ASSERT_EQ(r.status, 0) << show(r);
  const std::string saved = read_text(t.file("a/config.json"));
  const auto j = nlohmann::json::parse(saved);
  EXPECT_EQ(j["model"]["d_model"], 24);
  EXPECT_EQ(j["model"]["rank"], 3);
  EXPECT_EQ(j["model"]["heads"], 3);
  EXPECT_EQ(j["model"]["offsets"], nlohmann::json::array({1, 3}));
  EXPECT_EQ(j["train"]["tokenizer"], "word");
  EXPECT_EQ(j["train"]["epochs"], 2);
  EXPECT_EQ(j["train"]["seed"], 77);
  EXPECT_EQ(j["train"]["audit_trials"], 2);
  EXPECT_EQ(j["train"]["max_tokens"], 64);
  EXPECT_EQ(j["train"]["loss_impl"], "materialized");

  std::vector<std::string> b{"train", "--config", t.file("a/config.json"), "--out", t.file("b")};
  b.insert(b.end(), common.begin(), common.end());
  r = cli.run(b, 120);
  ASSERT_EQ(r.status, 0) << show(r);
  EXPECT_EQ(read_text(t.file("b/config.json")), saved);
}

}  // namespace
}  // namespace grassaudit::clitest
