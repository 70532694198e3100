#include "train/presets.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "util/error.h"

namespace grassaudit {
namespace {

// Optimizer settings the paper does not state ("same optimizer and schedule" for both models).
// Documented choices, shared by every mixer:
//   AdamW, lr 3e-4: the usual setting for ~10-20M-parameter post-norm LMs of width 256; higher
//     rates destabilise post-norm training without a long warmup.
//   betas (0.9, 0.98): the Transformer-paper values, standard for LM training at this scale.
//   weight decay 0.01 on matrices and embeddings only (not biases / LayerNorm gains).
//   warmup 1000 steps (about 2 of 30 epochs at batch 32, L 128), then cosine decay to 10% of lr
//     at the last step; gradient-norm clip 1.0; dropout 0.1 (the paper's value).
TrainConfig paper_train(int64_t batch) {
  TrainConfig t;
  t.batch = batch;
  t.eval_batch = batch;
  t.epochs = 30;
  t.lr = 3e-4;
  t.beta1 = 0.9;
  t.beta2 = 0.98;
  t.weight_decay = 0.01;
  t.warmup_steps = 1000;
  t.min_lr_ratio = 0.1;
  t.clip = 1.0;
  t.log_every = 50;
  return t;
}

// Every preset's model: the paper's dropout 0.1 and one offset per layer; the sizes vary.
struct ModelSize {
  int64_t d_model, rank, heads, d_ff;
};

ModelConfig preset_model(const ModelSize& size, int64_t layers, int64_t L, std::vector<int64_t> offsets) {
  ModelConfig m;
  m.d_model = size.d_model;
  m.rank = size.rank;
  m.layers = layers;
  m.max_len = L;
  m.heads = size.heads;
  m.d_ff = size.d_ff;
  m.dropout = 0.1;
  m.offsets = std::move(offsets);
  m.offset_mode = "per-layer";
  return m;
}

ModelConfig paper_model(int64_t layers, int64_t L, std::vector<int64_t> offsets) {
  return preset_model({/*d_model=*/256, /*rank=*/32, /*heads=*/4, /*d_ff=*/1024}, layers, L, std::move(offsets));
}

std::vector<Preset> all_presets() {
  std::vector<Preset> p;
  p.push_back({"paper-6l-L128", "paper, 6 layers, L 128, offsets 1,2,4,8,12,16 (one per layer), batch 32, 30 epochs",
               paper_model(6, 128, {1, 2, 4, 8, 12, 16}), paper_train(32)});
  p.push_back({"paper-6l-L128-alt", "paper's second 6-layer schedule: offsets 1,2,4,8,8,8",
               paper_model(6, 128, {1, 2, 4, 8, 8, 8}), paper_train(32)});
  p.push_back({"paper-12l-L256", "paper, 12 layers, L 256, offsets 1,1,2,2,4,4,8,8,12,12,16,16, batch 16",
               paper_model(12, 256, {1, 1, 2, 2, 4, 4, 8, 8, 12, 12, 16, 16}), paper_train(16)});

  // cpu-small: one full epoch of WikiText-2 (wordpiece, 2,265,484 training tokens, 554 steps of
  // 32 x 128) per mixer in about 20 minutes on the 2-core development machine (OpenBLAS).
  // The cost is dominated by the vocabulary (tied 30,522-way head and its softmax), so the width
  // d matters less than expected; the mixers cost about the same. Measured training throughput,
  // one thread, tokens per CPU-second (the machine was shared, load 5-7 on 2 cores, so these are
  // CPU-time rates; wall-clock rates with 2 threads could not be measured cleanly):
  //     d 128 (this preset):  past ~1,600-1,800, future ~1,700-1,800, attention ~1,600-1,650
  //     d  96, d_ff 384:      past ~1,900,       future ~1,900,       attention ~1,840
  //     d  64, d_ff 256:      all three ~2,350
  // With 2 threads on a quiet machine (~1.5-1.7x one thread): ~2,500 tokens/s, so ~15 minutes of
  // training plus ~2-3 minutes of evaluation and audit gates for the slowest mixer (attention).
  {
    Preset s{"cpu-small", "reduced model: one epoch of WikiText-2 in ~20 min per mixer on 2 CPU cores", {}, {}};
    // The paper's offset schedule, its first four layers.
    s.model = preset_model({/*d_model=*/128, /*rank=*/16, /*heads=*/4, /*d_ff=*/512}, 4, 128, {1, 2, 4, 8});
    s.train = paper_train(32);
    s.train.epochs = 1;
    // One epoch only: a higher peak rate and a short warmup so that the single pass learns
    // something; cosine to 10% as for the paper presets.
    s.train.lr = 1e-3;
    s.train.warmup_steps = 100;
    s.train.log_every = 20;
    p.push_back(s);
  }

  // tiny: for tests only (seconds). Evaluation is limited to the first 4,096 tokens of a split.
  {
    Preset t{"tiny", "test-only: a very small model, evaluation on the first 4,096 tokens", {}, {}};
    t.model = preset_model({/*d_model=*/16, /*rank=*/4, /*heads=*/2, /*d_ff=*/32}, 2, 16, {1, 2});
    t.train.batch = 4;
    t.train.eval_batch = 16;
    t.train.epochs = 1;
    t.train.lr = 1e-3;
    t.train.warmup_steps = 5;
    t.train.log_every = 1;
    t.train.eval_max_tokens = 4096;
    t.train.audit_trials = 1;
    t.train.audit_batch = 16;
    p.push_back(t);
  }
  return p;
}

}  // namespace

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  for (const auto& p : all_presets()) names.push_back(p.name);
  return names;
}

Preset get_preset(const std::string& name) {
  for (auto& p : all_presets())
    if (p.name == name) return p;
  throw InputError(fmt::format("unknown preset '{}' (valid: {})", name, fmt::join(preset_names(), ", ")));
}

}  // namespace grassaudit
