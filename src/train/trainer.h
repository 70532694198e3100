#pragma once
// The trainer shared by every mixer: AdamW, warmup + cosine, clipping, per-epoch evaluation
// through the audit gate, best-checkpoint keeping, bit-exact resume, SIGINT/SIGTERM handling.
//
// Artifacts in out_dir: config.json ({"model", "train"}, reusable as --config), metrics.jsonl,
// audit.json (the last gate's audit), summary.json (util/run_summary.h), checkpoints/last.ckpt,
// checkpoints/best.ckpt.
//
// Bit-exact resume: the data order is a pure function of (seed, epoch), the LR a pure function
// of the step; a checkpoint stores (epoch, batch in epoch, step), the optimizer state and the
// global RNG state (dropout), so a resumed run reproduces the uninterrupted run's losses exactly
// (same thread count, on CPU; on CUDA the dropout generator is not checkpointed, so a resumed GPU
// run continues correctly but not bit-exactly).
//
// Signals: SIGINT/SIGTERM are handled from the first training step on (after the data and the
// model are ready); earlier, the default action applies (nothing to save yet).
#include <cstdint>
#include <string>

#include "runtime/distributed.h"
#include "core/model_config.h"
#include "runtime/runtime.h"
#include "train/train_config.h"

namespace grassaudit {

struct TrainRequest {
  // Fresh runs: the resolved configs (vocab_size is set from the tokenizer; if
  // vocab_size_explicit, a mismatch with the tokenizer's vocabulary is an error).
  ModelConfig model;
  TrainConfig train;
  bool vocab_size_explicit = false;
  std::string preset;   // preset name or "config:<file>", for the record
  // Resume: model and train config come from the checkpoint; max_tokens_override >= 0 replaces
  // its max_tokens (0 = no limit).
  std::string resume;
  int64_t max_tokens_override = -1;
  std::string loss_impl_override;  // non-empty: replaces the checkpoint's loss_impl

  std::string out_dir;
  std::string data_dir;   // the --data-dir flag value ("" = default lookup)
  std::string cache_dir;  // tokenized corpus cache ("" = none)
  bool allow_other_data = false;
  std::string device = "cpu";  // cpu | cuda
  // CUDA float32 math of the training steps (runtime/runtime.h); evaluation is always IEEE float32
  // and the gate always audits an exact CPU copy. Must be kFp32 on CPU.
  CudaPrecision precision = CudaPrecision::kFp32;
  bool plain_progress = false; // never draw a bar (tests)
  bool print_banner = false;   // the runtime banner, once inputs are checked (the CLI)
  // Wall seconds this session may take (0 = no limit): training stops early enough for the
  // closing validation, audit and test evaluation to end inside it (train/loop.h). The LR
  // schedule still spans the planned epochs; summary.json records planned vs completed epochs.
  double time_budget_seconds = 0;
  // Data-parallel (started by torchrun, runtime/distributed.h): seconds a collective may wait for the
  // other ranks before the run ends naming the lost one (--dist-timeout).
  double dist_timeout_seconds = dist::kDefaultTimeoutSeconds;
};

struct TrainOutcome {
  bool interrupted = false;  // a signal stopped the run; last.ckpt holds its state
  bool completed = false;    // summary.json written
  int64_t steps = 0;
  std::string out_dir;
};

// Throws InputError for bad configs, data or checkpoints.
TrainOutcome run_training(const TrainRequest& request);

// The output folder a resumed run writes to when --out is not given: the folder holding
// "checkpoints/" (or the checkpoint's own folder).
std::string default_resume_out_dir(const std::string& checkpoint_path);

}  // namespace grassaudit
