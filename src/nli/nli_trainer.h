#pragma once
// grassaudit train-nli: SNLI with the Grassmann-Pluecker head or the Transformer head on the
// shared encoder (nli_model.h), several seeds in one run, under the conventions of the LM trainer
// (train/trainer.h): AdamW (weight decay on matrices and embeddings only), linear warmup + cosine
// (train/schedule.h), gradient clipping, per-epoch selection on the held-out split, atomic
// checkpoints, bit-exact resume, SIGINT/SIGTERM save-and-exit-0 (train/interrupt.h), progress
// bar on a terminal and plain lines otherwise (train/progress.h).
//
// Artifacts in out_dir:
//   config.json            {"model", "train", "seeds", "protocol", "features", "data"}
//   metrics-seed<S>.jsonl  {"type":"train", seed, step, epoch, loss, lr, examples_per_second,
//                           tokens_per_second, elapsed} every log_every steps and at epoch ends;
//                          {"type":"eval", seed, epoch, step, split:"val", accuracy, loss} per
//                          epoch; {"type":"eval", split:"test", epoch: best epoch, ...} at the end
//   summary.json           the report generator's SNLI record (util/run_summary.h), all seeds
//   checkpoints/last.ckpt  the current seed's state (+ results of the seeds already done)
//   checkpoints/best-seed<S>.ckpt  the best-validation weights of seed S (test is run on them)
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "runtime/distributed.h"
#include "nli/nli_model.h"
#include "nli/nli_train_config.h"

namespace grassaudit {

struct NliTrainRequest {
  NliConfig model;              // vocab_rows / full_vocab are set from the data
  NliTrainConfig train;
  std::vector<uint64_t> seeds{1, 2, 3};
  std::string data_dir;         // --data-dir ("" = default lookup)
  std::string train_file;       // --train ("" = offline protocol)
  std::string out_dir;
  std::string resume;           // a checkpoints/last.ckpt; its configs, seeds and data are used
  bool plain_progress = false;
  double dist_timeout_seconds = dist::kDefaultTimeoutSeconds;  // data-parallel (torchrun): c10d timeout
};

struct NliOutcome {
  bool interrupted = false;
  bool completed = false;
  std::string out_dir;
};

NliOutcome run_nli_training(const NliTrainRequest& request);

// Parameter count of a model with `config` (any head), built and discarded without touching the
// global RNG.
int64_t nli_parameter_count(const NliConfig& config, int64_t* head_params = nullptr);

// One line describing the shared encoder, for "features" in summary.json.
std::string nli_features_description(const NliConfig& c, bool offline);

}  // namespace grassaudit
