#include "train/trainer.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <torch/cuda.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>

#include "core/checkpoint.h"
#include "runtime/cpu_features.h"
#include "runtime/distributed.h"
#include "core/generate.h"
#include "core/lm_loss.h"
#include "core/row_dropout.h"
#include "runtime/runtime.h"
#include "core/token_mixer.h"
#include "text/detokenize.h"
#include "text/wikitext2.h"
#include "train/gate.h"
#include "train/interrupt.h"
#include "train/lm_data.h"
#include "train/loop.h"
#include "train/progress.h"
#include "train/provenance.h"
#include "train/rank_output.h"
#include "train/run_setup.h"
#include "train/schedule.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/format_count.h"
#include "util/jsonl_log.h"
#include "util/run_summary.h"

namespace grassaudit {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

c10::Device parse_device(const std::string& name) {
  if (name == "cpu") return c10::Device(c10::kCPU);
  if (name == "cuda") {
    if (!torch::cuda::is_available())
      throw InputError(
          "--device cuda: CUDA is not available (this LibTorch build has no CUDA support or no GPU is "
          "visible); use --device cpu");
    return c10::Device(c10::kCUDA, 0);
  }
  throw InputError(fmt::format("--device must be cpu or cuda, got '{}'", name));
}

// The loop's position plus what only the LM trainer tracks; meta["state"] of every checkpoint.
struct LmRunState {
  LoopState loop;
  std::optional<double> best_valid_loss;
  int64_t best_step = -1;
  double best_epoch = 0;
  int64_t last_eval_step = -1;  // step of the last validation evaluation
  // Early stopping (--patience) counts epoch-end validations only: the best loss among them and
  // how many in a row have not beaten it.
  std::optional<double> epoch_end_best_loss;
  int64_t epochs_without_improvement = 0;
  // What metrics.jsonl held when the checkpoint was taken (nullopt: a checkpoint from before
  // the extent was recorded; its resume falls back to the step rule).
  std::optional<LogExtent> metrics_extent;

  json to_json() const {
    return task_state_json(
        {{"best_valid_loss", best_valid_loss ? json(*best_valid_loss) : json(nullptr)},
         {"best_step", best_step},
         {"best_epoch", best_epoch},
         {"last_eval_step", last_eval_step},
         {"epoch_end_best_loss", epoch_end_best_loss ? json(*epoch_end_best_loss) : json(nullptr)},
         {"epochs_without_improvement", epochs_without_improvement}},
        loop, "tokens_seen", metrics_extent);
  }
  static LmRunState from_json(const json& j, const std::string& where) {
    LmRunState s;
    read_task_state(j, "tokens_seen", where, s.loop, s.metrics_extent, [&] {
      if (!j.at("best_valid_loss").is_null()) s.best_valid_loss = j.at("best_valid_loss").get<double>();
      s.best_step = j.at("best_step").get<int64_t>();
      s.best_epoch = j.at("best_epoch").get<double>();
      s.last_eval_step = j.at("last_eval_step").get<int64_t>();
      // Checkpoints written before early stopping existed: their best is the epoch-end best
      // when it was taken at an epoch end (the runs of that time validated only there).
      if (j.contains("epoch_end_best_loss")) {
        if (!j.at("epoch_end_best_loss").is_null()) s.epoch_end_best_loss = j.at("epoch_end_best_loss").get<double>();
        s.epochs_without_improvement = j.at("epochs_without_improvement").get<int64_t>();
      } else if (s.best_valid_loss) {
        s.epoch_end_best_loss = s.best_valid_loss;
        s.epochs_without_improvement = std::max<int64_t>(0, s.loop.epoch - std::llround(s.best_epoch));
      }
    });
    return s;
  }
};

// Configs and position of the run: from the request, or from the checkpoint it resumes.
struct ResolvedRun : RequestedConfigs<ModelConfig, TrainConfig> {
  using RequestedConfigs::RequestedConfigs;
  LmRunState state;
  std::string preset;
  LoadedCheckpoint checkpoint;
  json sessions_before = json::array();  // provenance of the sessions that trained the checkpoint
};

ResolvedRun resolve_run(const TrainRequest& req) {
  ResolvedRun r(req);
  r.preset = req.preset;
  if (!r.resuming) return r;
  r.checkpoint = load_checkpoint(req.resume);
  const json& meta = r.checkpoint.meta;
  if (!meta.contains("train") || !meta.contains("state"))
    throw InputError(fmt::format("{}: not a training checkpoint (no train config or state)", req.resume));
  r.model = r.checkpoint.config;
  r.train = train_config_from_json(meta.at("train"));
  r.state = LmRunState::from_json(meta.at("state"), req.resume);
  r.preset = meta.value("preset", std::string());
  r.sessions_before = earlier_sessions(&meta, r.state.loop.step);
  if (req.max_tokens_override >= 0) r.train.max_tokens = req.max_tokens_override;
  if (!req.loss_impl_override.empty()) r.train.loss_impl = req.loss_impl_override;
  const std::string rule = meta.value("dropout_masks", std::string(kDropoutMaskRuleBefore));
  if (rule != kDropoutMaskRule && r.model.dropout > 0)
    std::cerr << fmt::format("note: {} was trained with dropout masks '{}'; this build draws '{}', so the resumed "
                             "run is not bit-reproducible across the switch\n",
                             req.resume, rule, kDropoutMaskRule);
  return r;
}

struct LmSplits {
  int64_t L = 0;
  LmBlocks train, valid, test;
  std::map<std::string, std::string> data_sha256;  // every file read (provenance)
  Vocab vocab;                                      // for the closing sample's text
  std::string tokenizer;
};

// Tokenizes the corpus, fixes vocab_size and L, cuts the splits into blocks and checks that a
// resumed run sees the data its checkpoint was trained on.
LmSplits load_splits(const TrainRequest& req, ResolvedRun& run) {
  const TokenizedCorpus corpus = load_wikitext2(req.data_dir, run.train.tokenizer, req.allow_other_data, req.cache_dir);
  if ((run.resuming || req.vocab_size_explicit) && run.model.vocab_size != corpus.vocab_size())
    throw InputError(fmt::format("vocab_size {} does not match the {} tokenizer's vocabulary ({})",
                                 run.model.vocab_size, run.train.tokenizer, corpus.vocab_size()));
  run.model.vocab_size = corpus.vocab_size();
  run.model.validate();
  run.train.validate(run.model);
  LmSplits s;
  s.data_sha256 = corpus.file_sha256;
  s.vocab = corpus.vocab;
  s.tokenizer = corpus.tokenizer;
  s.L = run.train.block_len(run.model);
  run.train.seq_len = s.L;  // resolved
  s.train = make_lm_blocks(corpus.train, s.L);
  s.valid = make_lm_blocks(limit_tokens(corpus.valid, run.train.eval_max_tokens), s.L);
  s.test = make_lm_blocks(limit_tokens(corpus.test, run.train.eval_max_tokens), s.L);
  if (s.train.num_blocks == 0 || s.valid.num_blocks == 0 || s.test.num_blocks == 0)
    throw InputError(fmt::format("seq_len {} leaves a split with no complete block", s.L));
  LoopState& st = run.state.loop;
  const int64_t spe = (s.train.num_blocks + run.train.batch - 1) / run.train.batch;
  const int64_t total_steps = run.train.epochs * spe;
  if (run.resuming && (st.steps_per_epoch != spe || st.total_steps != total_steps))
    throw InputError(fmt::format("{}: the training data differ from the checkpoint's ({} steps per epoch now, {} then)",
                                 req.resume, spe, st.steps_per_epoch));
  st.steps_per_epoch = spe;
  st.total_steps = total_steps;
  return s;
}

struct RunPaths {
  std::string out, metrics, last, best;
};

// Creates the output folder, refuses to overwrite another run and removes temporaries of killed
// writers. (A resume restores metrics.jsonl only once everything it needs has loaded.)
RunPaths prepare_out_dir(const TrainRequest& req, bool resuming) {
  RunPaths p{req.out_dir, req.out_dir + "/metrics.jsonl", req.out_dir + "/checkpoints/last.ckpt",
             req.out_dir + "/checkpoints/best.ckpt"};
  prepare_run_folder(p.out, p.last, !resuming, {p.metrics, p.last}, "metrics.jsonl or checkpoints/last.ckpt");
  return p;
}

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  return fs::equivalent(a, b, ec);
}

// The gate's verdict beside every perplexity in metrics.jsonl.
void put_audit_fields(json& line, const AuditResult& a) {
  line["audit_verdict"] = verdict_name(a.verdict());
  line["leak_horizon"] = a.leak_horizon;
  line["weights_sha256"] = a.weights_sha256;
}

// The language-model task: WikiText-2 blocks, next-token cross-entropy, validation through the
// audit gate, best-checkpoint keeping.
class LmTask : public TrainingTask {
 public:
  LmTask(const TrainRequest& req, ResolvedRun& run, const LmSplits& data, const RunPaths& paths, c10::Device device,
         LanguageModel model, torch::optim::AdamW& optimizer, JsonlLog& metrics, Progress& progress)
      : run_(run), cfg_(run.train), data_(data), paths_(paths), device_(device), model_(std::move(model)),
        optimizer_(optimizer), metrics_(metrics), progress_(progress), clock_(run.state.loop.elapsed),
        gate_(gate_audit_options(data.L, cfg_.audit_trials, cfg_.audit_batch, cfg_.seed)),
        loss_impl_(parse_loss_impl(cfg_.loss_impl)),
        bf16_(req.precision == CudaPrecision::kBf16),
        autocast_device_(device.type()),
        last_good_(run.resuming ? req.resume : std::string()),
        last_good_step_(run.resuming ? run.state.loop.step : -1),
        saved_metrics_bytes_(run.resuming && same_file(req.resume, paths.last) ? metrics.extent().bytes : -1),
        session_inputs_{{}, req.device, dist::world_size(), cuda_precision_name(req.precision)},
        session_first_step_(run.state.loop.step) {}

  void begin_epoch(int64_t epoch) override { order_ = epoch_order(data_.train.num_blocks, cfg_.seed, epoch); }

  // Batch `index` is the GLOBAL batch (--batch rows, fewer at the epoch's end); data-parallel,
  // this rank takes its contiguous share of its rows (dist::row_share) and draws the dropout
  // masks of the whole batch (core/row_dropout.h), so the step is the one-process step.
  StepLoss step_loss(int64_t index) override {
    const int64_t B = cfg_.batch, first = index * B, n = std::min(B, data_.train.num_blocks - first);
    const dist::RowShare mine = dist::row_share(n);
    StepLoss out{at::Tensor(), n * data_.L, n * data_.L, static_cast<double>(mine.count) / static_cast<double>(n)};
    if (mine.count == 0) {
      out.loss = at::zeros({}, at::TensorOptions().device(device_)).requires_grad_(true);
    } else {
      auto [x, y] = make_batch(data_.train, order_.data() + first + mine.begin, mine.count);
      x = x.to(device_);
      y = y.to(device_);
      // x, y: [rows, L]; the fused head never builds the [rows * L, V] logits (core/lm_loss.h)
      const DropoutRowsScope rows(n, mine.begin, mine.count);
      out.loss = loss_of(x, y);
    }
    // A rank without rows drew no masks: give it rank 0's generator, equal again everywhere.
    if (dist::active() && n < dist::world_size()) dist::broadcast_cpu_rng();
    return out;
  }

  // The training loss of one batch (x, y: [n, L]): under bf16 autocast with --precision bf16;
  // the loop runs backward after the scope has ended, as autocast prescribes.
  torch::Tensor loss_of(const torch::Tensor& x, const torch::Tensor& y) {
    std::optional<AutocastScope> autocast;
    if (bf16_) autocast.emplace(autocast_device_, at::kBFloat16);
    return lm_loss(model_, x, y, loss_impl_);
  }

  bool validate() override {
    LoopState& st = run_.state.loop;
    progress_.break_line();
    std::cerr << "validation: auditing the weights, then evaluating...\n";
    const auto t0 = std::chrono::steady_clock::now();
    const ScopedCudaMath ieee_eval(CudaPrecision::kFp32);  // perplexities in IEEE float32 (no-op on CPU)
    auto g = gated_evaluate(gate_, model_, data_.valid, cfg_.eval_batch, device_, eval_should_stop(), loss_impl_);
    if (!g) return false;
    last_validation_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double ppl = g->stats.ppl();
    json line{{"type", "eval"}, {"epoch", st.epoch_float()}, {"step", st.step}, {"split", "valid"},
              {"loss", g->stats.loss}, {"tokens", g->stats.tokens}};
    put_ppl(line, "ppl", ppl, g->leaky());
    put_audit_fields(line, g->audit);
    metrics_.write_record(line);
    run_.state.last_eval_step = st.step;
    std::cerr << fmt::format("epoch {:.2f} step {}: {}\n", st.epoch_float(), st.step, describe_ppl("valid", ppl, g->audit));
    if (st.batch_in_epoch == st.steps_per_epoch) count_patience(g->stats.loss);
    if (!run_.state.best_valid_loss || g->stats.loss < *run_.state.best_valid_loss) {
      run_.state.best_valid_loss = g->stats.loss;
      run_.state.best_step = st.step;
      run_.state.best_epoch = st.epoch_float();
      if (dist::is_main()) save_checkpoint(paths_.best, model_, &optimizer_, meta());
    }
    return true;
  }

  bool patience_exhausted() const override {
    return cfg_.patience > 0 && run_.state.epochs_without_improvement >= cfg_.patience;
  }

  json train_record(const LogWindow& w, double lr) override {
    return json{{"type", "train"},  {"step", run_.state.loop.step}, {"epoch", run_.state.loop.epoch_float()},
                {"loss", w.last_loss}, {"lr", lr}, {"tokens_per_second", w.tokens_per_second()},
                {"elapsed", clock_.elapsed()}};
  }

  // The newest checkpoint on disk with finite weights: a resume starts there, and a diverged run
  // names it.
  void save_last() override {
    const int64_t step = run_.state.loop.step;
    if (!all_finite(*model_))
      throw std::runtime_error(fmt::format("the weights after step {} are not finite; not saving them (last good "
                                           "checkpoint: {})",
                                           step, last_good_.empty() ? "none" : last_good_));
    // Nothing new since the newest last.ckpt (the closing phase right after an epoch end, or a
    // resumed run that had finished training): it stays as it is.
    if (step == last_good_step_ && !last_good_.empty() && metrics_.extent().bytes == saved_metrics_bytes_) return;
    if (dist::is_main()) save_checkpoint(paths_.last, model_, &optimizer_, meta());
    last_good_ = paths_.last;
    last_good_step_ = step;
    saved_metrics_bytes_ = metrics_.extent().bytes;
  }

  [[noreturn]] void diverged(int64_t failed, double loss, double lr) override {
    std::string where = "no checkpoint was written before it";
    if (!last_good_.empty())
      where = fmt::format("last good checkpoint: {} (step {}{})", last_good_, last_good_step_,
                          last_good_step_ == failed - 1 ? ", the step just before; its weights may already be diverging"
                                                        : "");
    throw std::runtime_error(fmt::format("training loss is {} at step {} (lr {:.3g}); stopped without saving; {}",
                                         non_finite_name(loss), failed, lr, where));
  }

  // Seconds the closing phase (a validation, then the test evaluation, each audited) will take:
  // twice the last measured validation, else an estimate from the training rate (a forward pass
  // is ~1/3 of a training step; the gate ~2% of an epoch, measured in reports/bench/audit-cost).
  double closing_seconds_estimate() const {
    if (last_validation_seconds_ > 0) return 2 * last_validation_seconds_;
    const LoopState& st = run_.state.loop;
    if (st.units_seen == 0) return 0;
    const double per_token = st.train_seconds / static_cast<double>(st.units_seen);
    const double eval_tokens = static_cast<double>((data_.valid.num_blocks + data_.test.num_blocks) * data_.L);
    const double epoch_tokens = static_cast<double>(data_.train.num_blocks * data_.L);
    return per_token * (eval_tokens / 3 + 2 * 0.02 * epoch_tokens);
  }

  // Evaluation between batches stops for a signal in one process; data-parallel, the ranks
  // evaluate their shards to the end (the loop stops them together before the next step).
  static std::function<bool()> eval_should_stop() {
    if (dist::active()) return {};
    return [] { return interrupt_requested(); };
  }

  // The sessions that trained these weights: the checkpoint's, then this one up to now.
  json sessions() const {
    json all = run_.sessions_before;
    all.push_back(session_record(session_inputs_, session_first_step_, run_.state.loop.step));
    return all;
  }

  AuditGate& gate() { return gate_; }
  LossImpl loss_impl() const { return loss_impl_; }
  LanguageModel& model() { return model_; }
  const RunClock& clock() const { return clock_; }
  const c10::Device& device() const { return device_; }
  JsonlLog& metrics() { return metrics_; }

 private:
  void count_patience(double loss) {
    LmRunState& s = run_.state;
    if (!s.epoch_end_best_loss || loss < *s.epoch_end_best_loss) {
      s.epoch_end_best_loss = loss;
      s.epochs_without_improvement = 0;
    } else {
      ++s.epochs_without_improvement;
      if (cfg_.patience > 0)
        std::cerr << fmt::format("no improvement on the best epoch-end validation for {} of {} epochs (--patience)\n",
                                 s.epochs_without_improvement, cfg_.patience);
    }
  }

  // The log is synced before the checkpoint that counts its records is written (and renamed).
  json meta() {
    run_.state.loop.elapsed = clock_.elapsed();
    metrics_.sync();
    run_.state.metrics_extent = metrics_.extent();
    return json{{"train", to_json(cfg_)},
                {"state", run_.state.to_json()},
                {"preset", run_.preset},
                {"dropout_masks", kDropoutMaskRule},
                {"sessions", sessions()}};
  }
  ResolvedRun& run_;
  const TrainConfig& cfg_;
  const LmSplits& data_;
  const RunPaths& paths_;
  c10::Device device_;
  LanguageModel model_;
  torch::optim::AdamW& optimizer_;
  JsonlLog& metrics_;
  Progress& progress_;
  RunClock clock_;
  AuditGate gate_;
  LossImpl loss_impl_;
  bool bf16_;  // the forward and loss under bf16 autocast (--precision bf16; CUDA, or a CPU with native bf16)
  c10::DeviceType autocast_device_;
  std::vector<int64_t> order_;
  std::string last_good_;
  int64_t last_good_step_;
  double last_validation_seconds_ = 0;
  int64_t saved_metrics_bytes_;  // metrics.jsonl's bytes when paths_.last was last written (-1: unknown)
  ProvenanceInputs session_inputs_;  // no data hashes: a session record names code and command
  int64_t session_first_step_;
};

// summary.json (util/run_summary.h): the report generator's record of one LM run.
RunSummary lm_summary(const ResolvedRun& run, const LmSplits& data, const RunPaths& paths, const TrainRequest& req,
                      const GatedEval& test, int64_t params, double wall_seconds, LoopEnd end, const json& sessions) {
  const ModelConfig& m = run.model;
  const LmRunState& st = run.state;
  const MixerInfo& mixer = MixerRegistry::instance().info(m.mixer);
  RunSummary s;
  s.run = run_name_of(paths.out);
  s.task = "lm";
  LmSummary& lm = s.lm;
  lm.mixer = public_mixer_kind(mixer.base_name);
  lm.pairing = mixer.pairing;
  lm.tokenizer = run.train.tokenizer;
  lm.dataset = "wikitext-2 (v1 tokenized, <unk>)";
  lm.seq_len = data.L;
  lm.layers = m.layers;
  lm.d_model = m.d_model;
  lm.norm = m.norm;
  if (mixer.family == MixerFamily::kGrassmann) {
    lm.rank = m.rank;
    lm.offsets = std::vector<long long>(m.offsets.begin(), m.offsets.end());
    lm.offset_mode = m.offset_mode;
  } else {
    lm.heads = m.heads;
  }
  if (mixer.is_reference) lm.mixer_impl = m.mixer;
  lm.d_ff = m.d_ff;
  lm.vocab_size = m.vocab_size;
  lm.preset = run.preset;
  s.params = static_cast<double>(params);
  lm.epochs = static_cast<double>(st.loop.units_seen) / static_cast<double>(data.train.num_blocks * data.L);
  lm.epochs_planned = run.train.epochs;
  lm.stopped_by = loop_end_name(end);
  if (run.train.patience > 0) lm.patience = run.train.patience;
  if (req.time_budget_seconds > 0) lm.time_budget_seconds = req.time_budget_seconds;
  lm.steps = st.loop.step;
  lm.tokens_seen = static_cast<double>(st.loop.units_seen);
  s.wall_seconds = wall_seconds;
  s.train_seconds = st.loop.train_seconds;
  s.threads = at::get_num_threads();
  s.blas = blas_in_use();
  lm.device = req.device;
  lm.seed = run.train.seed;
  s.world_size = dist::world_size();
  // This session's seconds in the gradient all-reduce (incl. waiting for the slowest rank).
  if (dist::active()) lm.allreduce_seconds = dist::gradient_sync_seconds();
  lm.tokens_per_second = st.loop.units_seen / std::max(st.loop.train_seconds, 1e-9);
  s.audit = summary_audit(test.audit);
  lm.best_epoch = st.best_epoch;
  lm.best_step = st.best_step;
  lm.valid_tokens = data.valid.num_blocks * data.L;
  lm.test_tokens = test.stats.tokens;
  // The quarantine rule (util/quarantine.h): a leaky run's figures go under quarantined_* keys.
  const bool leaky = test.leaky();
  (leaky ? lm.quarantined_best_valid_ppl : lm.best_valid_ppl) = std::exp(*st.best_valid_loss);
  (leaky ? lm.quarantined_test_ppl : lm.test_ppl) = test.stats.ppl();
  s.provenance = run_provenance(ProvenanceInputs{data.data_sha256, req.device, dist::world_size(), cuda_precision_name(req.precision)});
  s.provenance["sessions"] = sessions;
  return s;
}

TrainOutcome interrupted_outcome(LmTask& task, const LoopState& st, const RunPaths& paths) {
  save_after_signal(task, "train", "", st, paths.last);
  TrainOutcome o;
  o.out_dir = paths.out;
  o.steps = st.step;
  o.interrupted = true;
  return o;
}

// sample.json: a short sample of the audited best weights through their incremental path, for
// the report: the first 16 tokens of the test split continued by 32 tokens,
// temperature 0.8, top-k 40, the run's seed. Only for a causal model with an incremental path
// (a leaky model's samples are quarantined like its numbers), on the CPU.
void write_sample(LanguageModel& model, const AuditResult& audit, const LmSplits& data, uint64_t seed,
                  const c10::Device& device, const std::string& path) {
  if (audit.leaky() || !model->has_incremental() || !device.is_cpu() || data.test.inputs.size() < 16) return;
  std::vector<int64_t> prompt(data.test.inputs.begin(), data.test.inputs.begin() + 16);
  SamplingOptions o;
  o.temperature = 0.8;
  o.top_k = 40;
  o.seed = seed;
  const auto ids = generate_tokens(model, prompt, 32, o);
  const json j{{"prompt", detokenize(data.vocab, prompt, data.tokenizer)},
               {"prompt_ids", prompt},
               {"text", detokenize(data.vocab, ids, data.tokenizer)},
               {"ids", ids},
               {"tokens", ids.size()},
               {"temperature", o.temperature},
               {"top_k", o.top_k},
               {"seed", o.seed},
               {"weights_sha256", audit.weights_sha256}};
  write_file_atomic(path, j.dump(2) + "\n");
}

// After the loop: validation of the final weights (if not just done), then the audited test
// evaluation of the best weights, audit.json, summary.json and sample.json.
TrainOutcome finish_run(LmTask& task, const ResolvedRun& run, const LmSplits& data, const RunPaths& paths,
                        const TrainRequest& req, int64_t params, int64_t session_first_step, LoopEnd end) {
  const LmRunState& st = run.state;
  if (st.last_eval_step != st.loop.step && !task.validate()) return interrupted_outcome(task, st.loop, paths);
  task.save_last();

  const c10::Device device = task.device();
  LanguageModel best = task.model();
  if (auto loaded = best_weights_from_rank0(
          paths.best, [&] { return load_checkpoint(paths.best).model; },  // leaves the global RNG as it is
          [&] { return LanguageModel(run.model); })) {
    best = *loaded;
    best->to(device);
  }
  std::cerr << "test: auditing the best weights, then evaluating...\n";
  const ScopedCudaMath ieee_eval(CudaPrecision::kFp32);  // perplexities in IEEE float32 (no-op on CPU)
  auto tg = gated_evaluate(task.gate(), best, data.test, run.train.eval_batch, device, LmTask::eval_should_stop(),
                           task.loss_impl());
  if (!tg) return interrupted_outcome(task, st.loop, paths);
  const AuditResult& audit = tg->audit;
  {
    json line{{"type", "eval"},  {"epoch", st.best_epoch}, {"step", st.best_step},
              {"split", "test"}, {"loss", tg->stats.loss}, {"tokens", tg->stats.tokens}};
    put_ppl(line, "ppl", tg->stats.ppl(), audit.leaky());
    put_audit_fields(line, audit);
    task.metrics().write_record(line);
  }
  const double wall = task.clock().elapsed();
  if (dist::is_main()) {
    write_file_atomic(paths.out + "/audit.json", to_json(audit).dump(2) + "\n");
    write_file_atomic(paths.out + "/summary.json",
                      to_json(lm_summary(run, data, paths, req, *tg, params, wall, end, task.sessions())).dump(2) + "\n");
    write_sample(best, audit, data, run.train.seed, device, paths.out + "/sample.json");
  }

  std::cout << fmt::format("{}\n{}\n", describe_ppl("best valid", std::exp(*st.best_valid_loss), audit),
                           describe_ppl("test", tg->stats.ppl(), audit));
  if (audit.leaky())
    std::cout << "LEAKY: the audit found outputs depending on future tokens; the figures above are "
                 "quarantined (keys quarantined_*), not perplexities.\n";
  const double tps = st.loop.units_seen / std::max(st.loop.train_seconds, 1e-9);
  std::cout << fmt::format("{} tokens in {} ({} training steps this session, {:.0f} tokens/s); artifacts in {}\n",
                           format_count(st.loop.units_seen), format_duration(wall),
                           st.loop.step - session_first_step, tps, paths.out);
  TrainOutcome o;
  o.out_dir = paths.out;
  o.steps = st.loop.step;
  o.completed = true;
  return o;
}

// Prints and saves the resolved config (config.json is reusable as --config).
void record_config(const ResolvedRun& run, const RunPaths& paths) {
  const json resolved{{"model", to_json(run.model)}, {"train", to_json(run.train)}};
  if (!dist::is_main()) return;
  write_file_atomic(paths.out + "/config.json", resolved.dump(2) + "\n");
  std::cout << "resolved config" << (run.preset.empty() ? "" : " (" + run.preset + ")") << ":\n"
            << resolved.dump(2) << std::endl;
}

void print_run_header(const ResolvedRun& run, const LmSplits& data, const TrainRequest& req, int64_t params) {
  const ModelConfig& m = run.model;
  const TrainConfig& t = run.train;
  const LoopState& st = run.state.loop;
  std::cerr << fmt::format(
      "{} model: mixer {}, {} parameters, vocabulary {} ({}), L {}, {} training blocks, {} steps per epoch, "
      "{} epochs{}\n",
      run.resuming ? "resumed" : "new", m.mixer, format_count(params), format_count(m.vocab_size), t.tokenizer, data.L,
      format_count(data.train.num_blocks), format_count(st.steps_per_epoch), t.epochs,
      t.max_tokens > 0 ? fmt::format(", stopping at {} tokens", format_count(t.max_tokens)) : "");
  if (run.resuming)
    std::cerr << fmt::format("resuming {} at step {} (epoch {}, batch {} of {})\n", req.resume, st.step, st.epoch + 1,
                             st.batch_in_epoch, st.steps_per_epoch);
}

}  // namespace

std::string default_resume_out_dir(const std::string& checkpoint_path) {
  fs::path dir = fs::path(checkpoint_path).parent_path();
  if (dir.empty()) dir = ".";
  if (dir.filename() == "checkpoints") return dir.parent_path().empty() ? "." : dir.parent_path().string();
  return dir.string();
}

TrainOutcome run_training(const TrainRequest& req) {
  const auto session_start = std::chrono::steady_clock::now();
  const c10::Device device = parse_device(req.device);
  dist::init_from_env(req.device, req.dist_timeout_seconds);  // launched by torchrun: join its group
  const RankOutputGuard print_once;
  if (!device.is_cuda() && req.precision == CudaPrecision::kTf32)
    throw InputError("--precision tf32 needs --device cuda (TF32 is a CUDA format)");
  if (!device.is_cuda() && req.precision == CudaPrecision::kBf16) {
    std::string why;
    if (!cpu_has_native_bf16(detect_cpu_features(), &why)) throw InputError("--precision bf16 on CPU: " + why);
  }
  if (device.is_cuda()) configure_cuda_math(req.precision);  // before the first cuBLAS handle
  ResolvedRun run = resolve_run(req);
  const LmSplits data = load_splits(req, run);
  // Every rank must train the same run: the resolved configs, the data read and the resume point.
  dist::check_same_everywhere(
      "configs or data",
      json{{"model", to_json(run.model)}, {"train", to_json(run.train)}, {"data", data.data_sha256},
           {"resume_step", run.state.loop.step}, {"device", req.device}, {"preset", run.preset}}
          .dump());
  const RunPaths paths = prepare_out_dir(req, run.resuming);
  // Everything the run needs has been read and checked: only now the runtime banner, so a bad
  // input ends in its one error line alone.
  if (req.print_banner) std::cerr << runtime_banner();
  if (req.print_banner && device.is_cuda()) std::cerr << cuda_math_description(req.precision) << "\n";
  if (req.print_banner && !device.is_cuda() && req.precision == CudaPrecision::kBf16)
    std::cerr << "CPU math: bf16 (native): the training forward and loss under CPU bf16 autocast (GEMMs in bf16, "
                 "weights, gradients and AdamW in float32, AdamW fused); evaluation in float32, the audit gate in "
                 "float32/float64\n";
  record_config(run, paths);

  const TrainConfig& t = run.train;
  LanguageModel model{nullptr};
  if (run.resuming) {
    model = run.checkpoint.model;
  } else {
    torch::manual_seed(t.seed);
    model = LanguageModel(run.model);
  }
  model->to(device);
  model->train();
  AdamWSettings adamw = adamw_settings(t);
  adamw.fused = !device.is_cuda() && req.precision == CudaPrecision::kBf16;  // fp32: LibTorch's AdamW, bit for bit
  auto optimizer = make_adamw(*model, adamw);
  if (run.resuming) {
    load_optimizer_and_rng(req.resume, *optimizer);  // also the global CPU RNG state (dropout)
    move_optimizer_state(*optimizer, device);
    // Everything the resume needs has loaded: only now is metrics.jsonl cut back to the checkpoint.
    if (dist::is_main())
      restore_metrics_log(paths.metrics, run.state.metrics_extent, run.state.loop.step, req.resume);
  }
  broadcast_weights(*model);  // data-parallel: every rank starts from rank 0's weights
  const int64_t params = model->parameter_count();
  if (dist::active())
    std::cerr << fmt::format("data-parallel: {} ranks (c10d {}, timeout {:g} s), global batch {}\n",
                             dist::world_size(), device.is_cuda() ? "NCCL" : "Gloo", dist::timeout_seconds(), t.batch);
  print_run_header(run, data, req, params);

  LoopState& st = run.state.loop;
  const int64_t tokens_per_step = t.batch * data.L;
  int64_t last_step = st.total_steps;
  if (t.max_tokens > 0) last_step = std::min(last_step, (t.max_tokens + tokens_per_step - 1) / tokens_per_step);
  LoopSettings loop = loop_settings(t, t.warmup_steps, last_step);
  loop.checkpoint_every = t.checkpoint_every;
  loop.max_units = t.max_tokens;

  JsonlLog metrics(dist::is_main() ? paths.metrics : "/dev/null");
  Progress progress(std::max<int64_t>(loop.last_step, st.step), t.log_every, req.plain_progress);
  LmTask task(req, run, data, paths, device, model, *optimizer, metrics, progress);
  if (device.is_cuda()) {
    // The CUDA start-up costs (seconds) outside the loop's clock: its step time after 3 steps is
    // then the steady one, which a short lease reads to see whether its plan fits.
    const int64_t n = std::min(t.batch, data.train.num_blocks);
    auto [x, y] = make_batch_range(data.train, 0, n);
    x = x.to(device);
    y = y.to(device);
    warm_up_training_step(*model, [&] { return task.loss_of(x, y); });
  }
  loop.time_budget_seconds = req.time_budget_seconds;
  loop.session_start = session_start;
  loop.reserve_seconds = [&task] { return task.closing_seconds_estimate(); };
  InterruptGuard interrupt_guard;  // from the first step on; earlier there is nothing to save
  const int64_t session_first_step = st.step;
  const LoopEnd end = run_training_loop(loop, task, *model, *optimizer, st, metrics, progress);
  progress.break_line();
  if (end == LoopEnd::kInterrupted) return interrupted_outcome(task, st, paths);
  if (end == LoopEnd::kPatience)
    std::cerr << fmt::format("patience: validation has not improved for {} epochs; stopped after epoch {} (best: "
                             "epoch {:.0f})\n",
                             t.patience, st.epoch, run.state.best_epoch);
  if (end == LoopEnd::kTimeBudget)
    std::cerr << fmt::format("time budget of {:g} s: training stopped at step {} (epoch {:.3f} of {}), leaving time "
                             "for the closing audit and evaluations\n",
                             req.time_budget_seconds, st.step, st.epoch_float(), t.epochs);
  return finish_run(task, run, data, paths, req, params, session_first_step, end);
}

}  // namespace grassaudit
