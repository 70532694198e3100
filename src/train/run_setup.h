#pragma once
// What both trainers (train/trainer.cpp, nli/nli_trainer.cpp) do around the shared loop
// (train/loop.h): prepare the output folder, start every rank from rank 0's weights, take the
// loop's and the optimizer's settings from their config, save and say how to resume after a
// signal, and bring the best-validation weights to every rank for the test. One copy, so the two
// tasks cannot drift apart in what a run folder, a resume hint or a data-parallel start means.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/nn/module.h>

#include "runtime/distributed.h"
#include "runtime/rng_guard.h"
#include "train/loop.h"

namespace grassaudit {

// Rank 0 only (data-parallel, the other ranks write nothing): creates `out` and out/checkpoints,
// refuses a fresh run in a folder that already holds one (any of `run_files` exists; the error
// names them as `run_files_text` and says how to continue with --resume `last`), then removes
// the partial files a killed writer left. A refused run leaves the folder as it found it.
void prepare_run_folder(const std::string& out, const std::string& last, bool fresh,
                        const std::vector<std::string>& run_files, const std::string& run_files_text);

// Data-parallel: every rank takes rank 0's parameters and buffers, whatever its platform would
// have made of the same seed or file. Nothing happens in one process.
void broadcast_weights(torch::nn::Module& model);

// True on every rank when rank 0 sees a file at `path` (rank 0 decides; the others may not see
// its disk).
bool rank0_has_file(const std::string& path);

// The best-validation weights on every rank, or nullopt when rank 0 wrote no best checkpoint at
// `path`. Rank 0 loads them (`load`); the other ranks build a model of the same shape (`build`,
// without touching the global RNG) and receive them, rather than read a file they may not see.
template <class Load, class Build>
auto best_weights_from_rank0(const std::string& path, Load load, Build build) -> std::optional<decltype(load())> {
  if (!rank0_has_file(path)) return std::nullopt;
  decltype(load()) best{nullptr};
  if (dist::is_main()) {
    best = load();
  } else {
    CpuRngGuard keep;  // building the model draws initial weights
    best = build();
  }
  broadcast_weights(*best);
  return best;
}

// The configs a run trains with: the request's, until resolving a resumed run replaces them with
// its checkpoint's. Both trainers' resolved runs start from it (ResolvedRun, NliRun).
template <class Model, class Train>
struct RequestedConfigs {
  template <class Request>
  explicit RequestedConfigs(const Request& req)
      : resuming(!req.resume.empty()), model(req.model), train(req.train) {}

  bool resuming;
  Model model;
  Train train;
};

// The loop settings every task takes from its config (TrainConfig, NliTrainConfig): epochs, lr,
// the cosine floor, the clip and the log interval; the warmup and the expected last step are the
// task's to compute.
template <class Config>
LoopSettings loop_settings(const Config& t, int64_t warmup_steps, int64_t last_step) {
  LoopSettings loop;
  loop.epochs = t.epochs;
  loop.warmup_steps = warmup_steps;
  loop.lr = t.lr;
  loop.min_lr_ratio = t.min_lr_ratio;
  loop.clip = t.clip;
  loop.log_every = t.log_every;
  loop.last_step = last_step;
  return loop;
}

template <class Config>
AdamWSettings adamw_settings(const Config& t) {
  return AdamWSettings{t.lr, t.beta1, t.beta2, t.adam_eps, t.weight_decay};
}

// A task's meta["state"] in every checkpoint: its own keys (`own`), the loop's position
// (units_seen under `units_key`: "tokens_seen", "examples_seen") and the metrics log's extent
// when there is one.
nlohmann::json task_state_json(nlohmann::json own, const LoopState& loop, const std::string& units_key,
                               const std::optional<LogExtent>& extent);
// Reads it back: the loop's position, then the task's own keys (`read_own`), then the extent. A
// key that is missing or of the wrong type is InputError "<where>: checkpoint training state is
// incomplete (...)".
void read_task_state(const nlohmann::json& state, const std::string& units_key, const std::string& where,
                     LoopState& loop, std::optional<LogExtent>& extent, const std::function<void()>& read_own);

// After a signal stopped the loop: saves last.ckpt (the task's save_last) and prints where the run
// stopped and the command that continues it. `command` is "train" or "train-nli"; `where`
// (e.g. " in seed 2") goes between the signal and the step.
void save_after_signal(TrainingTask& task, const std::string& command, const std::string& where,
                       const LoopState& state, const std::string& last);

}  // namespace grassaudit
