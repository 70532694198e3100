// The shared training loop (train/loop.h) on a toy task: where it stops, what it asks of the
// task and when, and that a resumed position continues where it left off.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/nn/modules/linear.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "train/loop.h"
#include "train/train_test_support.h"
#include "util/error.h"

namespace grassaudit {
namespace {

using nlohmann::json;
using testing::TempDir;

// y = w x, data fixed; records every call the loop makes.
class ToyTask : public TrainingTask {
 public:
  explicit ToyTask(torch::nn::Linear model) : model_(std::move(model)) {}
  void begin_epoch(int64_t epoch) override { calls.push_back("begin " + std::to_string(epoch)); }
  StepLoss step_loss(int64_t index) override {
    calls.push_back("step " + std::to_string(index));
    auto x = at::full({2, 3}, static_cast<double>(index + 1), at::kFloat);
    auto loss = model_->forward(x).pow(2).mean();
    if (nan_at_call >= 0 && ++step_calls == nan_at_call) loss = loss * std::numeric_limits<double>::quiet_NaN();
    return StepLoss{loss, 2, 6};
  }
  bool validate() override {
    calls.push_back("validate");
    return validate_result;
  }
  json train_record(const LogWindow& w, double lr) override {
    records.push_back(json{{"steps", w.steps}, {"units", w.units}, {"tokens", w.tokens}, {"lr", lr}});
    return records.back();
  }
  void save_last() override { calls.push_back("save"); }
  [[noreturn]] void diverged(int64_t failed, double, double) override {
    throw std::runtime_error("diverged at " + std::to_string(failed));
  }
  std::vector<std::string> calls;
  std::vector<json> records;
  bool validate_result = true;
  int nan_at_call = -1;
  int step_calls = 0;

 private:
  torch::nn::Linear model_;
};

struct Fixture {
  torch::nn::Linear model{torch::nn::LinearOptions(3, 1).bias(false)};
  std::unique_ptr<torch::optim::AdamW> opt = make_adamw(*model, AdamWSettings{1e-2, 0.9, 0.98, 1e-8, 0.01});
  ToyTask task{model};
  LoopState st;
  TempDir dir;
  JsonlLog metrics{dir.path() + "/metrics.jsonl"};
  Progress progress{6, 100, /*force_plain=*/true};
  LoopSettings cfg;
  Fixture() {
    st.steps_per_epoch = 3;
    st.total_steps = 6;
    cfg.epochs = 2;
    cfg.log_every = 2;
    cfg.last_step = 6;
  }
  LoopEnd run() { return run_training_loop(cfg, task, *model, *opt, st, metrics, progress); }
};

TEST(TrainingLoop, RunsEveryEpochValidatesAndSavesAtEpochEnds) {
  Fixture f;
  EXPECT_EQ(f.run(), LoopEnd::kCompleted);
  const std::vector<std::string> want{"begin 0", "step 0", "step 1", "step 2", "validate", "save",
                                      "begin 1", "step 0", "step 1", "step 2", "validate", "save"};
  EXPECT_EQ(f.task.calls, want);
  EXPECT_EQ(f.st.step, 6);
  EXPECT_EQ(f.st.epoch, 2);
  EXPECT_EQ(f.st.batch_in_epoch, 0);
  EXPECT_EQ(f.st.units_seen, 12);
  // Records every 2 steps and at each epoch end: steps 2, 3, 4, 6 with windows 2, 1, 1, 2.
  ASSERT_EQ(f.task.records.size(), 4u);
  EXPECT_EQ(f.task.records[0]["steps"], 2);
  EXPECT_EQ(f.task.records[1]["steps"], 1);
  EXPECT_EQ(f.task.records[2]["steps"], 1);
  EXPECT_EQ(f.task.records[3]["steps"], 2);
  EXPECT_EQ(f.task.records[3]["tokens"], 12);
}

TEST(TrainingLoop, ResumesMidEpochAtTheSavedBatch) {
  Fixture f;
  f.st.batch_in_epoch = 2;
  f.st.step = 2;
  EXPECT_EQ(f.run(), LoopEnd::kCompleted);
  EXPECT_EQ((std::vector<std::string>(f.task.calls.begin(), f.task.calls.begin() + 4)),
            (std::vector<std::string>{"begin 0", "step 2", "validate", "save"}));
  EXPECT_EQ(f.st.step, 6);
}

TEST(TrainingLoop, StopsAtTheUnitLimitBeforeTheNextStep) {
  Fixture f;
  f.cfg.max_units = 7;  // 2 units a step: stops after 4 steps (8 >= 7)
  EXPECT_EQ(f.run(), LoopEnd::kUnitLimit);
  EXPECT_EQ(f.st.step, 4);
  EXPECT_EQ(f.st.units_seen, 8);
  EXPECT_EQ(f.st.epoch, 1);
  EXPECT_EQ(f.st.batch_in_epoch, 1);
}

TEST(TrainingLoop, TimeBudgetStopsWhenTheReserveWouldNotFit) {
  Fixture f;
  f.cfg.time_budget_seconds = 3600;
  f.cfg.reserve_seconds = [] { return 1e9; };  // the closing phase alone exceeds the budget
  EXPECT_EQ(f.run(), LoopEnd::kTimeBudget);
  EXPECT_EQ(f.st.step, 0);

  Fixture g;
  g.cfg.time_budget_seconds = 3600;
  g.cfg.reserve_seconds = [] { return 1.0; };
  EXPECT_EQ(g.run(), LoopEnd::kCompleted);
  EXPECT_EQ(g.st.step, 6);
  EXPECT_STREQ(loop_end_name(LoopEnd::kTimeBudget), "time_budget");
}

TEST(TrainingLoop, InterruptedValidationEndsTheLoopWithoutSaving) {
  Fixture f;
  f.task.validate_result = false;
  EXPECT_EQ(f.run(), LoopEnd::kInterrupted);
  EXPECT_EQ(f.task.calls.back(), "validate");
  EXPECT_EQ(f.st.epoch, 0);
  EXPECT_EQ(f.st.batch_in_epoch, 3);  // the epoch-end evaluation is still pending on resume
}

TEST(TrainingLoop, NonFiniteLossReachesTheTaskWithTheStepCountedFromOne) {
  Fixture f;
  f.task.nan_at_call = 3;
  try {
    f.run();
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "diverged at 3");
  }
  EXPECT_EQ(f.st.step, 2);  // the failing step is not counted
}

TEST(TrainingLoop, AdamWDecaysMatricesOnly) {
  torch::nn::Linear m(torch::nn::LinearOptions(3, 2));
  auto opt = make_adamw(*m, AdamWSettings{1e-3, 0.9, 0.98, 1e-8, 0.05});
  ASSERT_EQ(opt->param_groups().size(), 2u);
  const auto& g0 = static_cast<const torch::optim::AdamWOptions&>(opt->param_groups()[0].options());
  const auto& g1 = static_cast<const torch::optim::AdamWOptions&>(opt->param_groups()[1].options());
  EXPECT_EQ(opt->param_groups()[0].params().size(), 1u);  // weight [2, 3]
  EXPECT_EQ(opt->param_groups()[1].params().size(), 1u);  // bias [2]
  EXPECT_DOUBLE_EQ(g0.weight_decay(), 0.05);
  EXPECT_DOUBLE_EQ(g1.weight_decay(), 0.0);
}

TEST(TrainingLoop, LoopStateRoundTripsUnderTheTasksUnitsKey) {
  LoopState s;
  s.epoch = 3;
  s.batch_in_epoch = 7;
  s.step = 100;
  s.units_seen = 12345;
  s.elapsed = 1.5;
  s.train_seconds = 1.25;
  s.steps_per_epoch = 40;
  s.total_steps = 400;
  json j;
  s.write_json(j, "examples_seen");
  EXPECT_EQ(j.at("examples_seen"), 12345);
  const LoopState r = LoopState::read_json(j, "examples_seen", "x");
  EXPECT_EQ(r.units_seen, 12345);
  EXPECT_EQ(r.total_steps, 400);
  EXPECT_THROW(LoopState::read_json(j, "tokens_seen", "x"), InputError);
}

TEST(TrainingLoop, RunNameIsTheOutputFolder) {
  EXPECT_EQ(run_name_of("runs/cpu-small-past"), "cpu-small-past");
  EXPECT_EQ(run_name_of("runs/cpu-small-past/"), "cpu-small-past");
}

}  // namespace
}  // namespace grassaudit
