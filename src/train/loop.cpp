#include "train/loop.h"

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <torch/nn/utils/clip_grad.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "runtime/distributed.h"
#include "runtime/torch_compat.h"
#include "train/fused_adamw.h"
#include "train/interrupt.h"
#include "train/schedule.h"
#include "util/error.h"

namespace grassaudit {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

double LoopState::epoch_float() const {
  return static_cast<double>(epoch) +
         (steps_per_epoch > 0 ? static_cast<double>(batch_in_epoch) / static_cast<double>(steps_per_epoch) : 0.0);
}

void LoopState::write_json(json& j, const std::string& units_key) const {
  j["epoch"] = epoch;
  j["batch_in_epoch"] = batch_in_epoch;
  j["step"] = step;
  j[units_key] = units_seen;
  j["elapsed"] = elapsed;
  j["train_seconds"] = train_seconds;
  j["steps_per_epoch"] = steps_per_epoch;
  j["total_steps"] = total_steps;
}

LoopState LoopState::read_json(const json& j, const std::string& units_key, const std::string& where) {
  LoopState s;
  try {
    s.epoch = j.at("epoch").get<int64_t>();
    s.batch_in_epoch = j.at("batch_in_epoch").get<int64_t>();
    s.step = j.at("step").get<int64_t>();
    s.units_seen = j.at(units_key).get<int64_t>();
    s.elapsed = j.at("elapsed").get<double>();
    s.train_seconds = j.at("train_seconds").get<double>();
    s.steps_per_epoch = j.at("steps_per_epoch").get<int64_t>();
    s.total_steps = j.at("total_steps").get<int64_t>();
  } catch (const json::exception& e) {
    throw InputError(fmt::format("{}: checkpoint training state is incomplete ({})", where, e.what()));
  }
  return s;
}

void write_log_extent(json& state, const LogExtent& extent) {
  state["metrics_records"] = extent.records;
  state["metrics_bytes"] = extent.bytes;
}

std::optional<LogExtent> read_log_extent(const json& state) {
  if (!state.contains("metrics_bytes")) return std::nullopt;
  return LogExtent{state.at("metrics_records").get<int64_t>(), state.at("metrics_bytes").get<int64_t>()};
}

void restore_metrics_log(const std::string& path, const std::optional<LogExtent>& extent, int64_t step,
                         const std::string& checkpoint) {
  const std::string note = extent ? restore_log(path, *extent, checkpoint) : truncate_metrics_after(path, step);
  if (!note.empty()) std::cerr << note << "\n";
}

std::unique_ptr<torch::optim::AdamW> make_adamw(torch::nn::Module& model, const AdamWSettings& s) {
  std::vector<at::Tensor> decay, no_decay;
  for (const auto& kv : model.named_parameters()) (kv.value().dim() >= 2 ? decay : no_decay).push_back(kv.value());
  auto options = [&](double wd) {
    return std::make_unique<torch::optim::AdamWOptions>(
        torch::optim::AdamWOptions(s.lr).betas({s.beta1, s.beta2}).eps(s.eps).weight_decay(wd));
  };
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(decay, options(s.weight_decay));
  groups.emplace_back(no_decay, options(0.0));
  if (s.fused) return std::make_unique<FusedAdamW>(groups, *options(s.weight_decay));
  return std::make_unique<torch::optim::AdamW>(groups, *options(s.weight_decay));
}

void move_optimizer_state(torch::optim::AdamW& optimizer, const c10::Device& device) {
  for (auto& kv : optimizer.state()) {
    auto& s = static_cast<torch::optim::AdamWParamState&>(*kv.second);
    s.exp_avg(s.exp_avg().to(device));
    s.exp_avg_sq(s.exp_avg_sq().to(device));
    if (s.max_exp_avg_sq().defined()) s.max_exp_avg_sq(s.max_exp_avg_sq().to(device));
  }
}

void set_learning_rate(torch::optim::AdamW& optimizer, double lr) {
  for (auto& group : optimizer.param_groups()) static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
}

double LogWindow::units_per_second() const { return static_cast<double>(units) / std::max(seconds, 1e-9); }
double LogWindow::tokens_per_second() const { return static_cast<double>(tokens) / std::max(seconds, 1e-9); }

double RunClock::elapsed() const {
  return before_ + std::chrono::duration<double>(Clock::now() - start_).count();
}

std::string run_name_of(const std::string& out_dir) {
  namespace fs = std::filesystem;
  std::string n = fs::path(out_dir).lexically_normal().filename().string();
  if (n.empty() || n == ".") n = fs::absolute(out_dir).lexically_normal().parent_path().filename().string();
  return n;
}

std::string non_finite_name(double value) { return std::isnan(value) ? "nan" : (value > 0 ? "inf" : "-inf"); }

namespace {

// After the first few steps of a session (the first one or two pay for allocation and warm-up):
// the measured step time and what it projects, so a short lease (a lent GPU) shows within a
// minute whether the planned epochs fit.
constexpr int64_t kProjectAfterSteps = 3;

void print_projection(const LoopSettings& cfg, const LoopState& st, double step_seconds, Progress& progress) {
  progress.break_line();
  const double epoch_s = step_seconds * static_cast<double>(st.steps_per_epoch);
  const double rest_s = step_seconds * static_cast<double>(std::max<int64_t>(cfg.last_step - st.step, 0));
  std::string budget;
  if (cfg.time_budget_seconds > 0) {
    const double used = std::chrono::duration<double>(Clock::now() - cfg.session_start).count();
    const double left = cfg.time_budget_seconds - used - (cfg.reserve_seconds ? cfg.reserve_seconds() : 0.0);
    const double steps_fit = std::max(0.0, left / std::max(step_seconds, 1e-9));
    const double per_epoch = static_cast<double>(std::max<int64_t>(st.steps_per_epoch, 1));
    budget = fmt::format("; the time budget fits ~{:.0f} more steps (to epoch ~{:.2f})", steps_fit,
                         (static_cast<double>(st.step) + steps_fit) / per_epoch);
  }
  std::cerr << fmt::format("step time {:.3g} s (after {} steps): epoch ~{}, the rest of this run ~{}{}\n", step_seconds,
                           kProjectAfterSteps, format_duration(epoch_s), format_duration(rest_s), budget);
}

// One optimizer step on batch `index`; returns the loss value (finite, or the task has thrown).
double train_step(const LoopSettings& cfg, TrainingTask& task, torch::nn::Module& model,
                  torch::optim::AdamW& optimizer, const LoopState& st, int64_t index, StepLoss* out, double* lr) {
  *lr = lr_at(st.step, st.total_steps, cfg.warmup_steps, cfg.lr, cfg.min_lr_ratio);
  set_learning_rate(optimizer, *lr);
  zero_grads(optimizer);
  *out = task.step_loss(index);
  out->loss.backward();
  // Data-parallel: the ranks' gradients, each weighted by its share of the global batch, summed
  // in buckets; every rank then clips and steps on the same global gradient.
  double global_loss = 0;
  if (dist::active())
    global_loss = dist::allreduce_gradients(model.parameters(), out->share, out->loss.item<double>() * out->share);
  if (cfg.clip > 0) torch::nn::utils::clip_grad_norm_(model.parameters(), cfg.clip);
  optimizer.step();
  const double value = dist::active() ? global_loss : out->loss.item<double>();
  // Steps are counted from 1, as in metrics.jsonl. Nothing is saved from here on.
  if (!std::isfinite(value)) task.diverged(st.step + 1, value, *lr);
  return value;
}

}  // namespace

const char* loop_end_name(LoopEnd end) {
  switch (end) {
    case LoopEnd::kCompleted: return "completed";
    case LoopEnd::kUnitLimit: return "max_tokens";
    case LoopEnd::kTimeBudget: return "time_budget";
    case LoopEnd::kInterrupted: return "interrupted";
    case LoopEnd::kPatience: return "patience";
  }
  return "completed";
}

LoopEnd run_training_loop(const LoopSettings& cfg, TrainingTask& task, torch::nn::Module& model,
                          torch::optim::AdamW& optimizer, LoopState& st, JsonlLog& metrics, Progress& progress) {
  const int64_t spe = st.steps_per_epoch;
  auto units_done = [&] { return cfg.max_units > 0 && st.units_seen >= cfg.max_units; };
  double recent_step_seconds = 0;  // exponential average, for the rate, the ETA and the budget
  // Another step plus the closing evaluations must still fit in the budget.
  auto budget_spent = [&] {
    if (cfg.time_budget_seconds <= 0) return false;
    const double used = std::chrono::duration<double>(Clock::now() - cfg.session_start).count();
    const double reserve = cfg.reserve_seconds ? cfg.reserve_seconds() : 0.0;
    return used + recent_step_seconds + reserve > cfg.time_budget_seconds;
  };
  LogWindow window;
  double window_lr = 0;
  int64_t session_steps = 0;
  int64_t order_epoch = -1;
  while (st.epoch < cfg.epochs) {
    // Before an epoch starts (also the first one of a resumed session, whose checkpoint may have
    // been written just after the validation that exhausted the patience).
    if (st.batch_in_epoch == 0 && task.patience_exhausted()) return LoopEnd::kPatience;
    if (order_epoch != st.epoch) {
      task.begin_epoch(st.epoch);
      order_epoch = st.epoch;
    }
    while (st.batch_in_epoch < spe) {
      // Signals and the time budget are decided by all ranks together (any rank's vote stops
      // every rank before the same step); units_done() is the same everywhere.
      bool stop_signal = interrupt_requested(), stop_budget = budget_spent();
      if (dist::active()) {
        auto votes = at::tensor({stop_signal ? 1.0 : 0.0, stop_budget ? 1.0 : 0.0}, at::kDouble);
        dist::allreduce_max(votes);
        stop_signal = votes[0].item<double>() > 0;
        stop_budget = votes[1].item<double>() > 0;
      }
      if (stop_signal) return LoopEnd::kInterrupted;
      if (units_done()) return LoopEnd::kUnitLimit;
      if (stop_budget) {
        if (window.steps > 0) metrics.write_record(task.train_record(window, window_lr));
        return LoopEnd::kTimeBudget;
      }
      const auto t0 = Clock::now();
      StepLoss sl;
      double lr = 0;
      const double loss = train_step(cfg, task, model, optimizer, st, st.batch_in_epoch, &sl, &lr);
      const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
      ++st.step;
      ++st.batch_in_epoch;
      st.units_seen += sl.units;
      st.train_seconds += dt;
      window.steps += 1;
      window.units += sl.units;
      window.tokens += sl.tokens;
      window.seconds += dt;
      window.loss_sum += loss;
      window.last_loss = loss;
      window_lr = lr;
      recent_step_seconds = recent_step_seconds == 0 ? dt : 0.9 * recent_step_seconds + 0.1 * dt;
      if (++session_steps == kProjectAfterSteps) print_projection(cfg, st, recent_step_seconds, progress);
      if (st.step % cfg.log_every == 0 || st.batch_in_epoch == spe || units_done()) {
        metrics.write_record(task.train_record(window, lr));
        window = LogWindow{};
      }
      const double eta = static_cast<double>(std::max<int64_t>(cfg.last_step - st.step, 0)) * recent_step_seconds;
      progress.update(st.step, st.epoch_float(), loss, lr,
                      static_cast<double>(sl.tokens) / std::max(recent_step_seconds, 1e-9), eta);
      // The epoch's last step is saved once, after its validation (just below).
      if (cfg.checkpoint_every > 0 && st.step % cfg.checkpoint_every == 0 && st.batch_in_epoch < spe) task.save_last();
    }
    // Epoch end: validation, then on to the next epoch with last.ckpt written.
    if (!task.validate()) return LoopEnd::kInterrupted;
    ++st.epoch;
    st.batch_in_epoch = 0;
    task.save_last();
    if (units_done()) return LoopEnd::kUnitLimit;
  }
  return LoopEnd::kCompleted;
}

}  // namespace grassaudit
