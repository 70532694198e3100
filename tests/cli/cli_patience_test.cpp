// --patience K: a run stops once K epoch-end validations in a row have not beaten the best one,
// records why and where its best epoch was, and a run cut into sessions by --time-budget stops
// at the same epoch with the same epoch-end validations as an uninterrupted run.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_training_runs.h"

namespace grassaudit::clitest {
namespace {

using nlohmann::json;

// A tiny model that overfits a small fake corpus within a few epochs (a high learning rate, no
// dropout), so validation stops improving long before the 40 planned epochs.
json overfitting_config() {
  json c = tiny_config();
  c["model"]["dropout"] = 0.0;
  c["train"]["epochs"] = 40;
  c["train"]["lr"] = 0.02;
  c["train"]["warmup_steps"] = 0;
  c["train"]["checkpoint_every"] = 0;
  c["train"]["log_every"] = 1000;
  c["train"]["patience"] = 2;
  return c;
}

// "epoch loss" of every validation taken at an epoch end (a whole epoch number).
std::vector<std::string> epoch_end_validations(const std::string& out) {
  std::vector<std::string> v;
  for (const auto& line : lines_of(read_text(out + "/metrics.jsonl"))) {
    const json j = json::parse(line);
    if (is_epoch_end_validation(j)) v.push_back(j["epoch"].dump() + " " + j["loss"].dump());
  }
  return v;
}

TEST(CliPatience, StopsWhenValidationStopsImproving) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  TrainingFixture f(120, overfitting_config(), 30);
  const std::string out = f.t.file("run");
  auto r = f.cli.run(f.fresh(out));
  ASSERT_EQ(r.status, 0) << show(r);
  const json s = json::parse(read_text(out + "/summary.json"));
  EXPECT_EQ(s["stopped_by"], "patience");
  EXPECT_EQ(s["patience"], 2);
  const auto valid = epoch_end_validations(out);
  ASSERT_GE(valid.size(), 3u);
  ASSERT_LT(valid.size(), 40u);
  // The best epoch-end validation is the one `patience` epochs before the last, and no later
  // one beat it.
  const double best_epoch = s["best_epoch"].get<double>();
  EXPECT_EQ(best_epoch + 2, static_cast<double>(valid.size())) << show(r);
  EXPECT_NE(r.err.find("patience: validation has not improved for 2 epochs"), std::string::npos) << show(r);
  EXPECT_DOUBLE_EQ(s["epochs"].get<double>(), static_cast<double>(valid.size()));
}

TEST(CliPatience, ARunCutByItsTimeBudgetStopsAtTheSameEpoch) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  TrainingFixture f(120, overfitting_config(), 30);
  const std::string ref = f.t.file("ref");
  auto r = f.cli.run(f.fresh(ref));
  ASSERT_EQ(r.status, 0) << show(r);
  const auto expected = epoch_end_validations(ref);

  // Sessions of a quarter second (the training steps of an epoch or two): each ends by its budget
  // (closing validation, test figure, summary) and the next resumes it. A session that made no
  // step gets twice the time.
  const std::string out = f.t.file("cut");
  double budget = 0.25;
  int sessions = 0;
  int64_t steps_before = -1;
  std::string stopped_by;
  while (stopped_by != "patience" && sessions < 40) {
    auto args = sessions == 0 ? f.fresh(out) : f.resume(out);
    args.push_back("--time-budget");
    args.push_back(std::to_string(budget));
    auto s = f.cli.run(args);
    ASSERT_EQ(s.status, 0) << show(s);
    ++sessions;
    const json summary = json::parse(read_text(out + "/summary.json"));
    stopped_by = summary["stopped_by"].get<std::string>();
    const int64_t steps = summary["steps"].get<int64_t>();
    if (steps == steps_before) budget *= 2;
    steps_before = steps;
  }
  ASSERT_EQ(stopped_by, "patience");
  EXPECT_GE(sessions, 2);
  EXPECT_EQ(epoch_end_validations(out), expected);
  EXPECT_EQ(json::parse(read_text(out + "/summary.json"))["epochs"], json::parse(read_text(ref + "/summary.json"))["epochs"]);
}

}  // namespace
}  // namespace grassaudit::clitest
