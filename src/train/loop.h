#pragma once
// The one training loop, shared by the language-model trainer (train/trainer.cpp) and the SNLI
// trainer (nli/nli_trainer.cpp). It owns what every run does the same way: AdamW with decay
// groups, the learning rate per step, zero_grad / backward / clip / step, the divergence check,
// position and time bookkeeping, metrics windows, the progress bar, periodic checkpoints,
// SIGINT/SIGTERM polling, and epoch ends (validation, then last.ckpt). A task supplies only what
// is its own: its batches and loss, its validation, its metrics record and its checkpoint archive.
//
// Bit-exact resume rests on three pure functions: the batch order of (seed, epoch) (the task's
// begin_epoch), the LR of the step (lr_at) and the RNG state saved in the checkpoint. The loop
// adds nothing that depends on the session, so an interrupted and resumed run computes the same
// losses as an uninterrupted one (same thread count).
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <ATen/core/Tensor.h>
#include <nlohmann/json_fwd.hpp>
#include <torch/nn/module.h>
#include <torch/optim/adamw.h>

#include "train/progress.h"
#include "util/jsonl_log.h"

namespace grassaudit {

// Where a run is, saved in every checkpoint's meta["state"] together with the task's own keys.
struct LoopState {
  int64_t epoch = 0;           // current epoch (0-based); == epochs when all are done
  int64_t batch_in_epoch = 0;  // next batch of the epoch; == steps_per_epoch: epoch-end eval pending
  int64_t step = 0;            // optimizer steps taken
  int64_t units_seen = 0;      // tokens (LM) or examples (SNLI) trained on
  double elapsed = 0;          // wall seconds, all sessions
  double train_seconds = 0;    // seconds inside training steps, all sessions
  int64_t steps_per_epoch = 0;
  int64_t total_steps = 0;

  double epoch_float() const;
  // Writes/reads the keys above into/from a state object; `units_key` names units_seen
  // ("tokens_seen" or "examples_seen"), as the checkpoints have always called it.
  void write_json(nlohmann::json& j, const std::string& units_key) const;
  static LoopState read_json(const nlohmann::json& j, const std::string& units_key, const std::string& where);
};

// The metrics log's extent in a checkpoint's meta["state"] ("metrics_records", "metrics_bytes"),
// taken after a sync so the log on disk holds at least that much whenever the checkpoint exists.
void write_log_extent(nlohmann::json& state, const LogExtent& extent);
// nullopt for checkpoints written before the extent was saved.
std::optional<LogExtent> read_log_extent(const nlohmann::json& state);

// Restores a resumed run's metrics log (rank 0 only, after everything the resume needs has
// loaded): to the checkpoint's extent, or for a checkpoint without one by the old rule (records
// with "step" <= step). Prints what was cut in one line.
void restore_metrics_log(const std::string& path, const std::optional<LogExtent>& extent, int64_t step,
                         const std::string& checkpoint);

// AdamW hyper-parameters; weight decay applies to matrices and embeddings (dim >= 2), not to
// biases and LayerNorm gains (the GPT-2 / nanoGPT split).
struct AdamWSettings {
  double lr = 3e-4, beta1 = 0.9, beta2 = 0.98, eps = 1e-8, weight_decay = 0.01;
  // FusedAdamW (train/fused_adamw.h): one pass a parameter, float32 rounding apart from LibTorch's
  // op sequence. The CPU bf16 path takes it; fp32 keeps LibTorch's AdamW bit for bit.
  bool fused = false;
};
std::unique_ptr<torch::optim::AdamW> make_adamw(torch::nn::Module& model, const AdamWSettings& s);
// Moves the optimizer's moments to `device` (after loading a CPU checkpoint; a no-op on CPU).
void move_optimizer_state(torch::optim::AdamW& optimizer, const c10::Device& device);

// One step's loss as the task computed it. Data-parallel (runtime/distributed.h): `loss` is this
// rank's mean over its rows of the global batch, `share` the fraction of the global batch's loss
// weight those rows carry (their units over the global units), so that the sum over ranks of
// share * gradient is the one-process gradient of the global mean; units and tokens count the
// whole global batch, so positions, schedules and checkpoints do not depend on the world size.
struct StepLoss {
  at::Tensor loss;     // 0-dim, requires grad; the loop calls backward()
  int64_t units = 0;   // rows trained on (tokens for the LM, examples for SNLI), all ranks
  int64_t tokens = 0;  // tokens in the batch (for tokens/s), all ranks
  double share = 1.0;  // this rank's weight in the global loss (1 in one process)
};

// The steps between two "train" metrics records.
struct LogWindow {
  int64_t steps = 0, units = 0, tokens = 0;
  double seconds = 0, loss_sum = 0, last_loss = 0;
  double mean_loss() const { return steps ? loss_sum / static_cast<double>(steps) : 0; }
  double units_per_second() const;
  double tokens_per_second() const;
};

// What the loop asks of a task.
class TrainingTask {
 public:
  virtual ~TrainingTask() = default;
  // Fixes the batch order of `epoch` (a pure function of the seed and the epoch).
  virtual void begin_epoch(int64_t epoch) = 0;
  // Forward pass and loss of batch `index` of the current epoch.
  virtual StepLoss step_loss(int64_t index) = 0;
  // Epoch-end validation; false when a signal interrupted it.
  virtual bool validate() = 0;
  // True when the task's early-stopping rule ends the run before the next epoch starts.
  virtual bool patience_exhausted() const { return false; }
  // The "train" metrics record for the window that just ended (lr: the last step's).
  virtual nlohmann::json train_record(const LogWindow& window, double lr) = 0;
  // Writes checkpoints/last.ckpt (the task's archive format and meta).
  virtual void save_last() = 0;
  // Called with a non-finite loss before anything is saved; must throw (the task names the step
  // and what it can offer: the last good checkpoint, a lower lr).
  [[noreturn]] virtual void diverged(int64_t failed_step, double loss, double lr) = 0;
};

struct LoopSettings {
  int64_t epochs = 1;
  int64_t warmup_steps = 0;
  double lr = 3e-4, min_lr_ratio = 0.1;
  double clip = 1.0;             // global gradient-norm clip; 0 = off
  int64_t log_every = 50;
  int64_t checkpoint_every = 0;  // also save last.ckpt every k steps; 0 = epoch ends only
  int64_t max_units = 0;         // stop once this many units were trained on; 0 = no limit
  int64_t last_step = 0;         // the step this session is expected to end at (ETA)
  // Wall-clock budget of this session in seconds (0 = none), counted from `session_start`. The
  // loop stops before a step that would leave less than reserve_seconds() (the task's estimate
  // of its closing evaluations) before the budget ends. The LR schedule still spans `epochs`.
  double time_budget_seconds = 0;
  std::chrono::steady_clock::time_point session_start = std::chrono::steady_clock::now();
  std::function<double()> reserve_seconds;
};

enum class LoopEnd {
  kCompleted,    // every epoch ran (validated, last.ckpt written)
  kUnitLimit,    // max_units reached (mid-epoch: nothing validated since the last epoch end)
  kTimeBudget,   // the time budget would not leave room for another step and the closing evaluations
  kInterrupted,  // a signal; the caller saves last.ckpt and says how to resume
  kPatience,     // validation stopped improving (the task's patience_exhausted) at an epoch end
};

// Runs steps from `state` on until the epochs, the unit limit or a signal end it. The caller
// has built the model, the optimizer (make_adamw, state loaded on resume) and `state`.
LoopEnd run_training_loop(const LoopSettings& settings, TrainingTask& task, torch::nn::Module& model,
                          torch::optim::AdamW& optimizer, LoopState& state, JsonlLog& metrics, Progress& progress);

// "completed", "max_tokens", "time_budget", "interrupted" or "patience" (summary.json "stopped_by").
const char* loop_end_name(LoopEnd end);

// Wall time of a run across sessions: the seconds recorded in the checkpoint plus this session's.
class RunClock {
 public:
  explicit RunClock(double elapsed_before = 0)
      : before_(elapsed_before), start_(std::chrono::steady_clock::now()) {}
  double elapsed() const;

 private:
  double before_;
  std::chrono::steady_clock::time_point start_;
};

// The run's name in summaries: the output folder's name (its parent's for "." or "x/").
std::string run_name_of(const std::string& out_dir);

// "nan", "inf" or "-inf" for a non-finite loss, as the divergence messages print it.
std::string non_finite_name(double value);

// Training AdamW options' lr set on every parameter group.
void set_learning_rate(torch::optim::AdamW& optimizer, double lr);

}  // namespace grassaudit
