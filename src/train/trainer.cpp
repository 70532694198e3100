#include "train/trainer.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <torch/cuda.h>
#include <torch/types.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adamw.h>
#include <torch/utils.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/checkpoint.h"
#include "core/runtime.h"
#include "text/wikitext2.h"
#include "train/gate.h"
#include "train/interrupt.h"
#include "train/lm_data.h"
#include "train/progress.h"
#include "train/schedule.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/format_count.h"
#include "util/jsonl_log.h"
#include "util/make_dirs.h"

namespace grassaudit {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

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

// Training-loop position and bookkeeping, stored in every checkpoint's meta["state"].
struct RunState {
  int64_t epoch = 0;           // current epoch (0-based); == epochs when all are done
  int64_t batch_in_epoch = 0;  // next batch of the epoch; == steps_per_epoch: epoch-end eval pending
  int64_t step = 0;            // optimizer steps taken
  int64_t tokens_seen = 0;
  double elapsed = 0;          // wall seconds, all sessions
  double train_seconds = 0;    // seconds inside training steps, all sessions
  std::optional<double> best_valid_loss;
  int64_t best_step = -1;
  double best_epoch = 0;
  int64_t last_eval_step = -1;  // step of the last validation evaluation
  int64_t steps_per_epoch = 0;
  int64_t total_steps = 0;

  json to_json() const {
    json j{{"epoch", epoch},
           {"batch_in_epoch", batch_in_epoch},
           {"step", step},
           {"tokens_seen", tokens_seen},
           {"elapsed", elapsed},
           {"train_seconds", train_seconds},
           {"best_valid_loss", best_valid_loss ? json(*best_valid_loss) : json(nullptr)},
           {"best_step", best_step},
           {"best_epoch", best_epoch},
           {"last_eval_step", last_eval_step},
           {"steps_per_epoch", steps_per_epoch},
           {"total_steps", total_steps}};
    return j;
  }
  static RunState from_json(const json& j, const std::string& where) {
    RunState s;
    try {
      s.epoch = j.at("epoch").get<int64_t>();
      s.batch_in_epoch = j.at("batch_in_epoch").get<int64_t>();
      s.step = j.at("step").get<int64_t>();
      s.tokens_seen = j.at("tokens_seen").get<int64_t>();
      s.elapsed = j.at("elapsed").get<double>();
      s.train_seconds = j.at("train_seconds").get<double>();
      if (!j.at("best_valid_loss").is_null()) s.best_valid_loss = j.at("best_valid_loss").get<double>();
      s.best_step = j.at("best_step").get<int64_t>();
      s.best_epoch = j.at("best_epoch").get<double>();
      s.last_eval_step = j.at("last_eval_step").get<int64_t>();
      s.steps_per_epoch = j.at("steps_per_epoch").get<int64_t>();
      s.total_steps = j.at("total_steps").get<int64_t>();
    } catch (const json::exception& e) {
      throw InputError(fmt::format("{}: checkpoint training state is incomplete ({})", where, e.what()));
    }
    return s;
  }
};

std::string base_mixer_name(const std::string& mixer) {
  const std::string prefix = "literal-";
  return mixer.rfind(prefix, 0) == 0 ? mixer.substr(prefix.size()) : mixer;
}

}  // namespace

std::string default_resume_out_dir(const std::string& checkpoint_path) {
  fs::path dir = fs::path(checkpoint_path).parent_path();
  if (dir.empty()) dir = ".";
  if (dir.filename() == "checkpoints") return dir.parent_path().empty() ? "." : dir.parent_path().string();
  return dir.string();
}

TrainOutcome run_training(const TrainRequest& req) {
  const auto session_start = Clock::now();
  const c10::Device device = parse_device(req.device);
  const bool resuming = !req.resume.empty();

  ModelConfig mcfg = req.model;
  TrainConfig tcfg = req.train;
  RunState st;
  LoadedCheckpoint ck;
  std::string preset = req.preset;
  if (resuming) {
    ck = load_checkpoint(req.resume);
    if (!ck.meta.contains("train") || !ck.meta.contains("state"))
      throw InputError(fmt::format("{}: not a training checkpoint (no train config or state)", req.resume));
    mcfg = ck.config;
    tcfg = train_config_from_json(ck.meta["train"]);
    st = RunState::from_json(ck.meta["state"], req.resume);
    preset = ck.meta.value("preset", std::string());
    if (req.max_tokens_override >= 0) tcfg.max_tokens = req.max_tokens_override;
  }

  // Data (vocabulary size comes from the tokenizer).
  TokenizedCorpus corpus = load_wikitext2(req.data_dir, tcfg.tokenizer, req.allow_other_data, req.cache_dir);
  if (resuming || req.vocab_size_explicit) {
    if (mcfg.vocab_size != corpus.vocab_size())
      throw InputError(fmt::format("vocab_size {} does not match the {} tokenizer's vocabulary ({})",
                                   mcfg.vocab_size, tcfg.tokenizer, corpus.vocab_size()));
  }
  mcfg.vocab_size = corpus.vocab_size();
  mcfg.validate();
  tcfg.validate(mcfg);
  const int64_t L = tcfg.block_len(mcfg);
  tcfg.seq_len = L;  // resolved
  const LmBlocks train = make_lm_blocks(corpus.train, L);
  const LmBlocks valid = make_lm_blocks(limit_tokens(corpus.valid, tcfg.eval_max_tokens), L);
  const LmBlocks test = make_lm_blocks(limit_tokens(corpus.test, tcfg.eval_max_tokens), L);
  if (train.num_blocks == 0 || valid.num_blocks == 0 || test.num_blocks == 0)
    throw InputError(fmt::format("seq_len {} leaves a split with no complete block", L));
  const int64_t B = tcfg.batch;
  const int64_t spe = (train.num_blocks + B - 1) / B;
  const int64_t total_steps = tcfg.epochs * spe;
  if (resuming) {
    if (st.steps_per_epoch != spe || st.total_steps != total_steps)
      throw InputError(fmt::format(
          "{}: the training data differ from the checkpoint's ({} steps per epoch now, {} then)", req.resume, spe,
          st.steps_per_epoch));
  }
  st.steps_per_epoch = spe;
  st.total_steps = total_steps;

  // Output folder.
  const std::string out = req.out_dir;
  make_dirs(out);
  make_dirs(out + "/checkpoints");
  const std::string metrics_path = out + "/metrics.jsonl";
  const std::string last_path = out + "/checkpoints/last.ckpt";
  const std::string best_path = out + "/checkpoints/best.ckpt";
  if (!resuming && (fs::exists(metrics_path) || fs::exists(last_path)))
    throw InputError(fmt::format("{} already holds a run (metrics.jsonl or checkpoints/last.ckpt); choose "
                                 "another --out, or continue it with --resume {}",
                                 out, last_path));
  // Temporaries left by a run killed mid-write (SIGKILL between create and rename).
  for (const auto& dir : {out, out + "/checkpoints"})
    for (const auto& stale : remove_stale_temp_files(dir))
      std::cerr << fmt::format("removed {} (a partial file left by a killed process)\n", stale);
  if (resuming) truncate_metrics_after(metrics_path, st.step);

  // Everything the run needs has been read and checked: only now the runtime banner, so a bad
  // input ends in its one error line alone.
  if (req.print_banner) std::cerr << runtime_banner();
  const json resolved{{"model", to_json(mcfg)}, {"train", to_json(tcfg)}};
  write_file_atomic(out + "/config.json", resolved.dump(2) + "\n");
  std::cout << "resolved config" << (preset.empty() ? "" : " (" + preset + ")") << ":\n"
            << resolved.dump(2) << std::endl;

  // Model and optimizer.
  LanguageModel model{nullptr};
  if (resuming) {
    model = ck.model;
  } else {
    torch::manual_seed(tcfg.seed);
    model = LanguageModel(mcfg);
  }
  model->to(device);
  model->train();
  std::vector<at::Tensor> decay, no_decay;
  for (const auto& kv : model->named_parameters())
    (kv.value().dim() >= 2 ? decay : no_decay).push_back(kv.value());
  auto options = [&](double wd) {
    return std::make_unique<torch::optim::AdamWOptions>(torch::optim::AdamWOptions(tcfg.lr)
                                                            .betas({tcfg.beta1, tcfg.beta2})
                                                            .eps(tcfg.adam_eps)
                                                            .weight_decay(wd));
  };
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(decay, options(tcfg.weight_decay));
  groups.emplace_back(no_decay, options(0.0));
  torch::optim::AdamW optimizer(groups, *options(tcfg.weight_decay));
  if (resuming) {
    load_optimizer_and_rng(req.resume, optimizer);  // also the global CPU RNG state (dropout)
    // Optimizer moments follow the parameters' device (a no-op on CPU).
    for (auto& kv : optimizer.state()) {
      auto& s = static_cast<torch::optim::AdamWParamState&>(*kv.second);
      s.exp_avg(s.exp_avg().to(device));
      s.exp_avg_sq(s.exp_avg_sq().to(device));
      if (s.max_exp_avg_sq().defined()) s.max_exp_avg_sq(s.max_exp_avg_sq().to(device));
    }
  }

  const int64_t params = model->parameter_count();
  std::cerr << fmt::format(
      "{} model: mixer {}, {} parameters, vocabulary {} ({}), L {}, {} training blocks, {} steps per epoch, "
      "{} epochs{}\n",
      resuming ? "resumed" : "new", mcfg.mixer, format_count(params), format_count(mcfg.vocab_size),
      tcfg.tokenizer, L, format_count(train.num_blocks), format_count(spe), tcfg.epochs,
      tcfg.max_tokens > 0 ? fmt::format(", stopping at {} tokens", format_count(tcfg.max_tokens)) : "");
  if (resuming)
    std::cerr << fmt::format("resuming {} at step {} (epoch {}, batch {} of {})\n", req.resume, st.step,
                             st.epoch + 1, st.batch_in_epoch, spe);

  AuditGate gate(gate_audit_options(L, tcfg.audit_trials, tcfg.audit_batch, tcfg.seed));
  JsonlLog metrics(metrics_path);
  const double elapsed_before = st.elapsed;
  auto now_elapsed = [&] { return elapsed_before + seconds_since(session_start); };
  auto epoch_float = [&] { return static_cast<double>(st.epoch) + static_cast<double>(st.batch_in_epoch) / spe; };
  auto meta = [&] {
    st.elapsed = now_elapsed();
    return json{{"train", to_json(tcfg)}, {"state", st.to_json()}, {"preset", preset}};
  };
  // The newest checkpoint on disk with finite weights: a resume starts there, and a diverged run
  // names it.
  std::string last_good = resuming ? req.resume : std::string();
  int64_t last_good_step = resuming ? st.step : -1;
  auto save_last = [&] {
    if (!all_finite(*model))
      throw std::runtime_error(fmt::format("the weights after step {} are not finite; not saving them (last good "
                                           "checkpoint: {})",
                                           st.step, last_good.empty() ? "none" : last_good));
    save_checkpoint(last_path, model, &optimizer, meta());
    last_good = last_path;
    last_good_step = st.step;
  };

  InterruptGuard interrupt_guard;
  auto should_stop = [] { return interrupt_requested(); };
  auto tokens_done = [&] { return tcfg.max_tokens > 0 && st.tokens_seen >= tcfg.max_tokens; };

  // Steps this session will run, for the progress bar and ETA.
  int64_t last_step = total_steps;
  if (tcfg.max_tokens > 0) last_step = std::min(last_step, (tcfg.max_tokens + B * L - 1) / (B * L));
  Progress progress(std::max<int64_t>(last_step, st.step), tcfg.log_every, req.plain_progress);

  // One validation evaluation through the gate; false when interrupted.
  auto validate = [&]() -> bool {
    progress.break_line();
    std::cerr << "validation: auditing the weights, then evaluating...\n";
    auto g = gated_evaluate(gate, model, valid, tcfg.eval_batch, device, should_stop);
    if (!g) return false;
    const double ppl = g->stats.ppl();
    json line{{"type", "eval"},
              {"epoch", epoch_float()},
              {"step", st.step},
              {"split", "valid"},
              {"loss", g->stats.loss},
              {"tokens", g->stats.tokens}};
    put_ppl(line, "ppl", ppl, g->leaky());
    line["audit_verdict"] = g->audit.verdict;
    line["leak_horizon"] = g->audit.leak_horizon;
    line["weights_sha256"] = g->audit.weights_sha256;
    metrics.write_record(line);
    st.last_eval_step = st.step;
    std::cerr << fmt::format("epoch {:.2f} step {}: {}\n", epoch_float(), st.step,
                             describe_ppl("valid", ppl, g->audit));
    if (!st.best_valid_loss || g->stats.loss < *st.best_valid_loss) {
      st.best_valid_loss = g->stats.loss;
      st.best_step = st.step;
      st.best_epoch = epoch_float();
      save_checkpoint(best_path, model, &optimizer, meta());
    }
    return true;
  };

  // ---- training loop ----
  bool interrupted = false;
  const int64_t session_first_step = st.step;
  int64_t window_tokens = 0;
  double window_seconds = 0;
  double recent_step_seconds = 0;
  std::vector<int64_t> order;
  int64_t order_epoch = -1;
  const double train_seconds_before = st.train_seconds;
  double session_train_seconds = 0;
  while (st.epoch < tcfg.epochs && !interrupted) {
    if (order_epoch != st.epoch) {
      order = epoch_order(train.num_blocks, tcfg.seed, st.epoch);
      order_epoch = st.epoch;
    }
    while (st.batch_in_epoch < spe) {
      if (interrupt_requested()) {
        interrupted = true;
        break;
      }
      if (tokens_done()) break;
      const auto t0 = Clock::now();
      const int64_t first = st.batch_in_epoch * B;
      const int64_t n = std::min(B, train.num_blocks - first);
      auto [x, y] = make_batch(train, order.data() + first, n);
      x = x.to(device);
      y = y.to(device);
      const double lr = lr_at(st.step, total_steps, tcfg.warmup_steps, tcfg.lr, tcfg.min_lr_ratio);
      for (auto& group : optimizer.param_groups())
        static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
      optimizer.zero_grad();
      auto logits = model->forward(x);
      auto loss = at::cross_entropy_loss(logits.reshape({-1, logits.size(-1)}), y.reshape({-1}));
      loss.backward();
      if (tcfg.clip > 0) torch::nn::utils::clip_grad_norm_(model->parameters(), tcfg.clip);
      optimizer.step();
      const double loss_value = loss.item<double>();
      const double dt = seconds_since(t0);
      if (!std::isfinite(loss_value)) {
        // Steps are counted from 1, as in metrics.jsonl. Nothing is saved from here on.
        const int64_t failed = st.step + 1;
        std::string where = "no checkpoint was written before it";
        if (!last_good.empty())
          where = fmt::format("last good checkpoint: {} (step {}{})", last_good, last_good_step,
                              last_good_step == failed - 1 ? ", the step just before; its weights may already be "
                                                             "diverging"
                                                           : "");
        throw std::runtime_error(fmt::format("training loss is {} at step {} (lr {:.3g}); stopped without saving; {}",
                                             std::isnan(loss_value) ? "nan" : (loss_value > 0 ? "inf" : "-inf"),
                                             failed, lr, where));
      }
      ++st.step;
      ++st.batch_in_epoch;
      st.tokens_seen += n * L;
      session_train_seconds += dt;
      st.train_seconds = train_seconds_before + session_train_seconds;
      window_tokens += n * L;
      window_seconds += dt;
      recent_step_seconds = recent_step_seconds == 0 ? dt : 0.9 * recent_step_seconds + 0.1 * dt;
      const double recent_tps = static_cast<double>(n * L) / std::max(recent_step_seconds, 1e-9);
      if (st.step % tcfg.log_every == 0 || st.batch_in_epoch == spe || tokens_done()) {
        metrics.write_record(json{{"type", "train"},
                           {"step", st.step},
                           {"epoch", epoch_float()},
                           {"loss", loss_value},
                           {"lr", lr},
                           {"tokens_per_second", window_tokens / std::max(window_seconds, 1e-9)},
                           {"elapsed", now_elapsed()}});
        window_tokens = 0;
        window_seconds = 0;
      }
      const double eta = static_cast<double>(std::max<int64_t>(last_step - st.step, 0)) * recent_step_seconds;
      progress.update(st.step, epoch_float(), loss_value, lr, recent_tps, eta);
      if (tcfg.checkpoint_every > 0 && st.step % tcfg.checkpoint_every == 0) save_last();
    }
    if (interrupted || st.batch_in_epoch < spe) break;  // a signal, or --max-tokens mid-epoch
    // Epoch end: validation through the gate, then on to the next epoch.
    if (!validate()) {
      interrupted = true;
      break;
    }
    ++st.epoch;
    st.batch_in_epoch = 0;
    save_last();
    if (tokens_done()) break;
  }
  progress.break_line();

  TrainOutcome outcome;
  outcome.out_dir = out;
  outcome.steps = st.step;
  auto report_interrupt = [&] {
    save_last();
    std::cerr << fmt::format(
        "grassaudit train: stopped by signal {} at step {} (epoch {:.3f}); checkpoint saved to {}\n"
        "  continue with: grassaudit train --resume {}\n",
        interrupt_signal(), st.step, epoch_float(), last_path, last_path);
    outcome.interrupted = true;
    return outcome;
  };
  if (interrupted) return report_interrupt();

  // ---- final phase: validation of the final weights (if not just done), test on the best ----
  if (st.last_eval_step != st.step && !validate()) return report_interrupt();
  save_last();

  LanguageModel best{nullptr};
  if (fs::exists(best_path)) {
    best = load_checkpoint(best_path).model;  // leaves the global RNG as it is
    best->to(device);
  } else {
    best = model;
  }
  std::cerr << "test: auditing the best weights, then evaluating...\n";
  auto tg = gated_evaluate(gate, best, test, tcfg.eval_batch, device, should_stop);
  if (!tg) return report_interrupt();
  const AuditResult& audit = tg->audit;
  const bool leaky = audit.leaky();
  const double test_ppl = tg->stats.ppl();
  const double best_valid_ppl = std::exp(*st.best_valid_loss);
  {
    json line{{"type", "eval"},   {"epoch", st.best_epoch},         {"step", st.best_step},
              {"split", "test"},  {"loss", tg->stats.loss},         {"tokens", tg->stats.tokens}};
    put_ppl(line, "ppl", test_ppl, leaky);
    line["audit_verdict"] = audit.verdict;
    line["leak_horizon"] = audit.leak_horizon;
    line["weights_sha256"] = audit.weights_sha256;
    metrics.write_record(line);
  }
  write_file_atomic(out + "/audit.json", to_json(audit).dump(2) + "\n");

  const double total_train_seconds = st.train_seconds;
  json summary{{"run", fs::path(out).lexically_normal().filename().string()},
               {"task", "lm"},
               {"mixer", base_mixer_name(mcfg.mixer)},
               {"pairing", mcfg.mixer == "attention" ? "causal-mask" : base_mixer_name(mcfg.mixer)},
               {"tokenizer", tcfg.tokenizer},
               {"dataset", "wikitext-2 (v1 tokenized, <unk>)"},
               {"seq_len", L},
               {"layers", mcfg.layers},
               {"d_model", mcfg.d_model}};
  if (summary["run"].get<std::string>().empty() || summary["run"] == ".")
    summary["run"] = fs::absolute(out).lexically_normal().parent_path().filename().string();
  if (mcfg.is_grassmann()) {
    summary["rank"] = mcfg.rank;
    summary["offsets"] = mcfg.offsets;
    summary["offset_mode"] = mcfg.offset_mode;
  } else {
    summary["heads"] = mcfg.heads;
  }
  if (mcfg.mixer != base_mixer_name(mcfg.mixer)) summary["mixer_impl"] = mcfg.mixer;
  summary["d_ff"] = mcfg.d_ff;
  summary["vocab_size"] = mcfg.vocab_size;
  summary["preset"] = preset;
  summary["params"] = params;
  summary["epochs"] = static_cast<double>(st.tokens_seen) / static_cast<double>(train.num_blocks * L);
  summary["epochs_planned"] = tcfg.epochs;
  summary["steps"] = st.step;
  summary["tokens_seen"] = st.tokens_seen;
  summary["wall_seconds"] = now_elapsed();
  summary["train_seconds"] = total_train_seconds;
  summary["threads"] = at::get_num_threads();
  summary["blas"] = blas_in_use();
  summary["device"] = req.device;
  summary["seed"] = tcfg.seed;
  summary["tokens_per_second"] = st.tokens_seen / std::max(total_train_seconds, 1e-9);
  summary["audit"] = audit_brief(audit);
  summary["best_epoch"] = st.best_epoch;
  summary["best_step"] = st.best_step;
  summary["valid_tokens"] = valid.num_blocks * L;
  summary["test_tokens"] = tg->stats.tokens;
  put_ppl(summary, "best_valid_ppl", best_valid_ppl, leaky);
  put_ppl(summary, "test_ppl", test_ppl, leaky);
  write_file_atomic(out + "/summary.json", summary.dump(2) + "\n");

  std::cout << fmt::format("{}\n{}\n", describe_ppl("best valid", best_valid_ppl, audit),
                           describe_ppl("test", test_ppl, audit));
  if (leaky)
    std::cout << "LEAKY: the audit found outputs depending on future tokens; the figures above are "
                 "quarantined (keys quarantined_*), not perplexities.\n";
  std::cout << fmt::format("{} tokens in {} ({} training steps this session, {:.0f} tokens/s); artifacts in {}\n",
                           format_count(st.tokens_seen), format_duration(now_elapsed()),
                           st.step - session_first_step, st.tokens_seen / std::max(total_train_seconds, 1e-9),
                           out);
  outcome.completed = true;
  return outcome;
}

}  // namespace grassaudit
