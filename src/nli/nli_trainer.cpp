#include "nli/nli_trainer.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adamw.h>
#include <torch/utils.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "core/runtime.h"
#include "core/checkpoint.h"
#include "core/rng_guard.h"
#include "nli/nli_checkpoint.h"
#include "nli/nli_data.h"
#include "text/vocab.h"
#include "text/wordpiece.h"
#include "train/interrupt.h"
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

// Position of one seed's training, stored in checkpoints under meta["state"].
struct SeedState {
  int64_t epoch = 0;           // 0-based; == epochs when training is done
  int64_t batch_in_epoch = 0;  // == steps_per_epoch: the epoch's validation is pending
  int64_t step = 0;
  int64_t examples_seen = 0;
  double elapsed = 0;          // wall seconds of this seed, all sessions
  double train_seconds = 0;
  std::optional<double> best_val_acc;
  int64_t best_epoch = 0;      // 1-based epoch of the best validation accuracy
  int64_t steps_per_epoch = 0;
  int64_t total_steps = 0;

  json to_json() const {
    return json{{"epoch", epoch},
                {"batch_in_epoch", batch_in_epoch},
                {"step", step},
                {"examples_seen", examples_seen},
                {"elapsed", elapsed},
                {"train_seconds", train_seconds},
                {"best_val_acc", best_val_acc ? json(*best_val_acc) : json(nullptr)},
                {"best_epoch", best_epoch},
                {"steps_per_epoch", steps_per_epoch},
                {"total_steps", total_steps}};
  }
  static SeedState from_json(const json& j, const std::string& where) {
    SeedState s;
    try {
      s.epoch = j.at("epoch").get<int64_t>();
      s.batch_in_epoch = j.at("batch_in_epoch").get<int64_t>();
      s.step = j.at("step").get<int64_t>();
      s.examples_seen = j.at("examples_seen").get<int64_t>();
      s.elapsed = j.at("elapsed").get<double>();
      s.train_seconds = j.at("train_seconds").get<double>();
      if (!j.at("best_val_acc").is_null()) s.best_val_acc = j.at("best_val_acc").get<double>();
      s.best_epoch = j.at("best_epoch").get<int64_t>();
      s.steps_per_epoch = j.at("steps_per_epoch").get<int64_t>();
      s.total_steps = j.at("total_steps").get<int64_t>();
    } catch (const json::exception& e) {
      throw InputError(fmt::format("{}: checkpoint training state is incomplete ({})", where, e.what()));
    }
    return s;
  }
};

struct SeedResult {
  uint64_t seed = 0;
  double val_acc = 0, test_acc = 0, test_loss = 0;
  int64_t best_epoch = 0, steps = 0;
  double wall_seconds = 0, train_seconds = 0;
  json to_json() const {
    return json{{"seed", seed},         {"val_acc", val_acc},       {"test_acc", test_acc},
                {"test_loss", test_loss}, {"best_epoch", best_epoch}, {"steps", steps},
                {"wall_seconds", wall_seconds}, {"train_seconds", train_seconds}};
  }
  static SeedResult from_json(const json& j) {
    SeedResult r;
    r.seed = j.at("seed").get<uint64_t>();
    r.val_acc = j.at("val_acc").get<double>();
    r.test_acc = j.at("test_acc").get<double>();
    r.test_loss = j.value("test_loss", 0.0);
    r.best_epoch = j.at("best_epoch").get<int64_t>();
    r.steps = j.at("steps").get<int64_t>();
    r.wall_seconds = j.at("wall_seconds").get<double>();
    r.train_seconds = j.value("train_seconds", 0.0);
    return r;
  }
};


struct EvalResult {
  double accuracy = 0, loss = 0;
  int64_t examples = 0;
};

// Accuracy and mean cross-entropy over a split, eval mode, no grad; nullopt if interrupted.
std::optional<EvalResult> evaluate(NliModel& model, const std::vector<NliExample>& examples, int64_t batch,
                                   int64_t multiple) {
  const bool was_training = model->is_training();
  model->eval();
  torch::NoGradGuard no_grad;
  const auto order = length_sorted_order(examples);
  const int64_t n = static_cast<int64_t>(order.size());
  int64_t correct = 0;
  double loss_sum = 0;
  for (int64_t first = 0; first < n; first += batch) {
    if (interrupt_requested()) {
      if (was_training) model->train();
      return std::nullopt;
    }
    const int64_t m = std::min(batch, n - first);
    auto b = make_nli_batch(examples, order.data() + first, m, multiple);
    auto logits = model->forward(b.ids, b.segments, b.mask);
    loss_sum += at::cross_entropy_loss(logits, b.labels, {}, at::Reduction::Sum).item<double>();
    correct += logits.argmax(-1).eq(b.labels).sum().item<int64_t>();
  }
  if (was_training) model->train();
  return EvalResult{static_cast<double>(correct) / static_cast<double>(std::max<int64_t>(n, 1)),
                    loss_sum / static_cast<double>(std::max<int64_t>(n, 1)), n};
}

double mean_of(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}
double sample_std(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  const double m = mean_of(v);
  double ss = 0;
  for (double x : v) ss += (x - m) * (x - m);
  return std::sqrt(ss / static_cast<double>(v.size() - 1));
}

}  // namespace

// ---------------------------------------------------------------------------------------------

void NliTrainConfig::validate() const {
  auto bad = [](const std::string& what) { throw InputError(what); };
  if (epochs < 1) bad(fmt::format("--epochs must be >= 1, got {}", epochs));
  if (batch < 1) bad(fmt::format("--batch must be >= 1, got {}", batch));
  if (!(lr > 0) || !std::isfinite(lr)) bad(fmt::format("--lr must be > 0, got {}", lr));
  if (!(weight_decay >= 0)) bad("weight_decay must be >= 0");
  if (!(warmup_fraction >= 0 && warmup_fraction < 1)) bad("warmup_fraction must be in [0, 1)");
  if (!(min_lr_ratio >= 0 && min_lr_ratio <= 1)) bad("min_lr_ratio must be in [0, 1]");
  if (!(clip >= 0)) bad("clip must be >= 0");
  if (log_every < 1) bad("log_every must be >= 1");
  if (eval_batch < 1) bad("eval_batch must be >= 1");
  if (!(holdout > 0 && holdout < 1)) bad("holdout must be in (0, 1)");
  if (max_examples < 0) bad(fmt::format("--max-examples must be >= 0, got {}", max_examples));
  if (max_sentence_tokens < 1) bad("max_sentence_tokens must be >= 1");
}

json to_json(const NliTrainConfig& c) {
  return json{{"epochs", c.epochs},         {"batch", c.batch},
              {"lr", c.lr},                 {"beta1", c.beta1},
              {"beta2", c.beta2},           {"adam_eps", c.adam_eps},
              {"weight_decay", c.weight_decay}, {"warmup_fraction", c.warmup_fraction},
              {"min_lr_ratio", c.min_lr_ratio}, {"clip", c.clip},
              {"log_every", c.log_every},   {"eval_batch", c.eval_batch},
              {"holdout", c.holdout},       {"max_examples", c.max_examples},
              {"max_sentence_tokens", c.max_sentence_tokens}};
}

NliTrainConfig nli_train_config_from_json(const json& j, NliTrainConfig c) {
  if (!j.is_object()) throw InputError("NLI train config must be a JSON object");
  try {
    for (auto it = j.begin(); it != j.end(); ++it) {
      const std::string& k = it.key();
      const json& v = it.value();
      if (k == "epochs") c.epochs = v.get<int64_t>();
      else if (k == "batch") c.batch = v.get<int64_t>();
      else if (k == "lr") c.lr = v.get<double>();
      else if (k == "beta1") c.beta1 = v.get<double>();
      else if (k == "beta2") c.beta2 = v.get<double>();
      else if (k == "adam_eps") c.adam_eps = v.get<double>();
      else if (k == "weight_decay") c.weight_decay = v.get<double>();
      else if (k == "warmup_fraction") c.warmup_fraction = v.get<double>();
      else if (k == "min_lr_ratio") c.min_lr_ratio = v.get<double>();
      else if (k == "clip") c.clip = v.get<double>();
      else if (k == "log_every") c.log_every = v.get<int64_t>();
      else if (k == "eval_batch") c.eval_batch = v.get<int64_t>();
      else if (k == "holdout") c.holdout = v.get<double>();
      else if (k == "max_examples") c.max_examples = v.get<int64_t>();
      else if (k == "max_sentence_tokens") c.max_sentence_tokens = v.get<int64_t>();
      else throw InputError(fmt::format("NLI train config: unknown key '{}'", k));
    }
  } catch (const json::exception& e) {
    throw InputError(fmt::format("NLI train config: wrong value type ({})", e.what()));
  }
  return c;
}

int64_t nli_parameter_count(const NliConfig& config, int64_t* head_params) {
  CpuRngGuard keep;  // building the model draws initial weights
  NliModel m(config, at::Tensor());
  if (head_params) *head_params = m->head_parameter_count();
  return m->parameter_count();
}

std::string nli_features_description(const NliConfig& c, bool offline) {
  std::string layers =
      c.encoder_layers == 0
          ? std::string("no contextual layer")
          : fmt::format("{} self-attention layer{} ({} heads, d_ff {})", c.encoder_layers,
                        c.encoder_layers == 1 ? "" : "s", c.heads, c.d_ff);
  return fmt::format(
      "shared encoder trained from scratch with the head on SNLI {}: WordPiece embeddings + learned positions + "
      "segments (d {}), {}; the same encoder for both heads (the paper used frozen DistilBERT-base-uncased "
      "features; no pretrained encoder offline)",
      offline ? "dev (90%)" : "train", c.d_model, layers);
}

NliOutcome run_nli_training(const NliTrainRequest& req) {
  const bool resuming = !req.resume.empty();

  NliConfig mcfg = req.model;
  NliTrainConfig tcfg = req.train;
  std::vector<uint64_t> seeds = req.seeds;
  std::string train_file = req.train_file;
  std::vector<SeedResult> completed;
  std::optional<LoadedNliCheckpoint> ck;
  uint64_t resume_seed = 0;
  SeedState resume_state;
  if (resuming) {
    ck = load_nli_checkpoint(req.resume);
    const json& m = ck->meta;
    if (!m.contains("train") || !m.contains("state") || !m.contains("seeds") || !m.contains("seed"))
      throw InputError(fmt::format("{}: not a train-nli training checkpoint (no train config or state)", req.resume));
    try {
      mcfg = ck->config;
      tcfg = nli_train_config_from_json(m["train"]);
      seeds = m["seeds"].get<std::vector<uint64_t>>();
      resume_seed = m["seed"].get<uint64_t>();
      train_file = m.value("train_file", std::string());
      for (const auto& r : m.value("completed", json::array())) completed.push_back(SeedResult::from_json(r));
    } catch (const json::exception& e) {
      throw InputError(fmt::format("{}: checkpoint meta is incomplete ({})", req.resume, e.what()));
    }
    resume_state = SeedState::from_json(m["state"], req.resume);
  }
  tcfg.validate();
  if (seeds.empty()) throw InputError("no seeds given");

  // Tokenizer and data.
  const std::string vocab_path = nli_vocab_path(req.data_dir);
  WordPieceTokenizer tok(Vocab::load_bert(vocab_path));
  NliDataOptions dopt;
  dopt.data_dir = req.data_dir;
  dopt.train_file = train_file;
  dopt.holdout = tcfg.holdout;
  dopt.max_examples = tcfg.max_examples;
  dopt.max_sentence_tokens = tcfg.max_sentence_tokens;
  const NliData data = load_nli_data(tok, dopt);
  std::cerr << runtime_banner();  // after the data: a missing file is reported as one line
  int64_t rows = 0;
  const at::Tensor vocab_map = build_vocab_map(tok.vocab(), data.train.examples, &rows);
  if (resuming) {
    if (mcfg.vocab_rows != rows || mcfg.full_vocab != tok.vocab().size())
      throw InputError(fmt::format("{}: the training data differ from the checkpoint's ({} embedding rows now, {} then)",
                                   req.resume, rows, mcfg.vocab_rows));
  }
  mcfg.full_vocab = tok.vocab().size();
  mcfg.vocab_rows = rows;
  mcfg.max_len = std::max<int64_t>(
      mcfg.max_len, (2 * tcfg.max_sentence_tokens + 3 + mcfg.window - 1) / mcfg.window * mcfg.window);
  mcfg.validate();
  const int64_t n_train = static_cast<int64_t>(data.train.examples.size());
  const int64_t B = tcfg.batch;
  const int64_t spe = (n_train + B - 1) / B;
  const int64_t total_steps = spe * tcfg.epochs;
  const int64_t warmup = static_cast<int64_t>(std::llround(tcfg.warmup_fraction * static_cast<double>(total_steps)));
  if (resuming && (resume_state.steps_per_epoch != spe || resume_state.total_steps != total_steps))
    throw InputError(fmt::format("{}: the training data differ from the checkpoint's ({} steps per epoch now, {} then)",
                                 req.resume, spe, resume_state.steps_per_epoch));

  // Output folder.
  const std::string out = req.out_dir;
  make_dirs(out);
  make_dirs(out + "/checkpoints");
  for (const auto& dir : {out, out + "/checkpoints"})  // partial files of a killed run
    for (const auto& stale : remove_stale_temp_files(dir))
      std::cerr << fmt::format("removed {} (a partial file left by a killed process)\n", stale);
  const std::string last_path = out + "/checkpoints/last.ckpt";
  auto metrics_path = [&](uint64_t s) { return fmt::format("{}/metrics-seed{}.jsonl", out, s); };
  auto best_path = [&](uint64_t s) { return fmt::format("{}/checkpoints/best-seed{}.ckpt", out, s); };
  if (!resuming) {
    bool taken = fs::exists(last_path) || fs::exists(out + "/summary.json");
    for (uint64_t s : seeds) taken = taken || fs::exists(metrics_path(s));
    if (taken)
      throw InputError(fmt::format("{} already holds a run (summary.json, metrics or checkpoints/last.ckpt); choose "
                                   "another --out, or continue it with --resume {}",
                                   out, last_path));
  }

  const std::string features = nli_features_description(mcfg, data.offline);
  int64_t head_params = 0;
  const int64_t params = nli_parameter_count(mcfg, &head_params);
  NliConfig other = mcfg;
  other.head = mcfg.head == "grassmann" ? "transformer" : "grassmann";
  int64_t other_head_params = 0;
  const int64_t other_params = nli_parameter_count(other, &other_head_params);
  const json resolved{{"model", to_json(mcfg)},
                      {"train", to_json(tcfg)},
                      {"seeds", seeds},
                      {"protocol", data.protocol},
                      {"features", features},
                      {"train_file", train_file},
                      {"data", {{"train", data.train.source}, {"val", data.val.source}, {"test", data.test.source},
                                {"train_pairs", n_train}, {"val_pairs", data.val.examples.size()},
                                {"test_pairs", data.test.examples.size()},
                                {"truncated_pairs", data.train.truncated + data.val.truncated + data.test.truncated}}}};
  write_file_atomic(out + "/config.json", resolved.dump(2) + "\n");
  std::cout << "resolved config:\n" << resolved.dump(2) << std::endl;
  std::cerr << fmt::format(
      "SNLI, {} head: {} parameters = head {} + shared encoder {} ({} embedding rows of {} WordPiece ids); the {} "
      "head with the same settings: {} = head {} + the same encoder\n"
      "protocol: {}\n{} train / {} val / {} test pairs, batch {}, {} steps per epoch, {} epochs, seeds {}\n",
      mcfg.head, format_count(params), format_count(head_params), format_count(params - head_params),
      format_count(rows), format_count(mcfg.full_vocab), other.head, format_count(other_params),
      format_count(other_head_params), data.protocol, format_count(n_train), format_count(data.val.examples.size()),
      format_count(data.test.examples.size()), B, format_count(spe), tcfg.epochs, json(seeds).dump());

  InterruptGuard interrupt_guard;
  NliOutcome outcome;
  outcome.out_dir = out;

  auto is_done = [&](uint64_t s) {
    for (const auto& r : completed)
      if (r.seed == s) return true;
    return false;
  };
  bool first_session_seed = true;
  for (uint64_t seed : seeds) {
    if (is_done(seed)) continue;
    const bool resume_this = resuming && first_session_seed && seed == resume_seed;
    if (resuming && first_session_seed && seed != resume_seed && !is_done(resume_seed))
      throw InputError(fmt::format("{}: checkpoint is for seed {}, but seed {} comes first and is not done", req.resume,
                                   resume_seed, seed));
    first_session_seed = false;
    const auto seed_start = Clock::now();

    // Model, optimizer, state.
    SeedState st;
    NliModel model{nullptr};
    if (resume_this) {
      model = ck->model;
      st = resume_state;
    } else {
      torch::manual_seed(seed);
      model = NliModel(mcfg, vocab_map);
      st.steps_per_epoch = spe;
      st.total_steps = total_steps;
    }
    model->train();
    std::vector<at::Tensor> decay, no_decay;
    for (const auto& kv : model->named_parameters())
      (kv.value().dim() >= 2 ? decay : no_decay).push_back(kv.value());
    auto options = [&](double wd) {
      return std::make_unique<torch::optim::AdamWOptions>(
          torch::optim::AdamWOptions(tcfg.lr).betas({tcfg.beta1, tcfg.beta2}).eps(tcfg.adam_eps).weight_decay(wd));
    };
    std::vector<torch::optim::OptimizerParamGroup> groups;
    groups.emplace_back(decay, options(tcfg.weight_decay));
    groups.emplace_back(no_decay, options(0.0));
    torch::optim::AdamW optimizer(groups, *options(tcfg.weight_decay));
    if (resume_this) load_nli_optimizer_and_rng(req.resume, optimizer);

    if (resume_this) truncate_metrics_after(metrics_path(seed), st.step);
    JsonlLog metrics(metrics_path(seed), /*append=*/resume_this);
    const double elapsed_before = st.elapsed;
    const double train_seconds_before = st.train_seconds;
    auto now_elapsed = [&] { return elapsed_before + seconds_since(seed_start); };
    auto epoch_float = [&] { return static_cast<double>(st.epoch) + static_cast<double>(st.batch_in_epoch) / spe; };
    auto meta = [&] {
      st.elapsed = now_elapsed();
      json done = json::array();
      for (const auto& r : completed) done.push_back(r.to_json());
      return json{{"train", to_json(tcfg)}, {"seeds", seeds},       {"seed", seed},
                  {"state", st.to_json()},  {"completed", done},    {"train_file", train_file},
                  {"protocol", data.protocol}};
    };
    auto save_last = [&] {
      if (!all_finite(*model))
        throw std::runtime_error(fmt::format("seed {}: the weights after step {} are not finite; not saving them",
                                             seed, st.step));
      save_nli_checkpoint(last_path, model, &optimizer, meta());
    };
    std::cerr << fmt::format("seed {}: {}\n", seed,
                             resume_this ? fmt::format("resuming {} at step {} (epoch {}, batch {} of {})", req.resume,
                                                       st.step, st.epoch + 1, st.batch_in_epoch, spe)
                                         : std::string("new model"));

    Progress progress(total_steps, tcfg.log_every, req.plain_progress);
    auto validate = [&]() -> bool {
      progress.break_line();
      auto r = evaluate(model, data.val.examples, tcfg.eval_batch, mcfg.window);
      if (!r) return false;
      const int64_t epoch1 = st.epoch + 1;
      metrics.write_record(json{{"type", "eval"}, {"seed", seed}, {"epoch", epoch1}, {"step", st.step}, {"split", "val"},
                         {"accuracy", r->accuracy}, {"loss", r->loss}, {"examples", r->examples},
                         {"elapsed", now_elapsed()}});
      const bool best = !st.best_val_acc || r->accuracy > *st.best_val_acc;
      std::cerr << fmt::format("seed {} epoch {}: val accuracy {:.4f} (loss {:.4f}){}\n", seed, epoch1, r->accuracy,
                               r->loss, best ? ", best so far" : "");
      if (best) {
        st.best_val_acc = r->accuracy;
        st.best_epoch = epoch1;
        save_nli_checkpoint(best_path(seed), model, &optimizer, meta());
      }
      return true;
    };

    // ---- training loop ----
    bool interrupted = false;
    std::vector<std::vector<int64_t>> order;
    int64_t order_epoch = -1;
    double window_loss = 0, window_seconds = 0, recent_step = 0;
    int64_t window_steps = 0, window_examples = 0, window_tokens = 0;
    double session_train_seconds = 0;
    while (st.epoch < tcfg.epochs && !interrupted) {
      if (order_epoch != st.epoch) {
        order = epoch_batches(data.train.examples, B, seed, st.epoch);
        if (static_cast<int64_t>(order.size()) != spe) throw std::logic_error("epoch_batches: wrong batch count");
        order_epoch = st.epoch;
      }
      while (st.batch_in_epoch < spe) {
        if (interrupt_requested()) {
          interrupted = true;
          break;
        }
        const auto t0 = Clock::now();
        const auto& rows_of_batch = order[static_cast<size_t>(st.batch_in_epoch)];
        const int64_t n = static_cast<int64_t>(rows_of_batch.size());
        auto b = make_nli_batch(data.train.examples, rows_of_batch.data(), n, mcfg.window);
        const double lr = lr_at(st.step, total_steps, warmup, tcfg.lr, tcfg.min_lr_ratio);
        for (auto& group : optimizer.param_groups())
          static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
        optimizer.zero_grad();
        auto logits = model->forward(b.ids, b.segments, b.mask);
        auto loss = at::cross_entropy_loss(logits, b.labels);
        loss.backward();
        if (tcfg.clip > 0) torch::nn::utils::clip_grad_norm_(model->parameters(), tcfg.clip);
        optimizer.step();
        const double loss_value = loss.item<double>();
        const double dt = seconds_since(t0);
        if (!std::isfinite(loss_value))
          throw std::runtime_error(fmt::format(  // steps counted from 1, as in the metrics file
              "training loss is {} at step {} (seed {}); stopped without saving; lower --lr (now {:.3g})",
              std::isnan(loss_value) ? "nan" : (loss_value > 0 ? "inf" : "-inf"), st.step + 1, seed, lr));
        const int64_t tokens = b.mask.sum().item<int64_t>();
        ++st.step;
        ++st.batch_in_epoch;
        st.examples_seen += n;
        session_train_seconds += dt;
        st.train_seconds = train_seconds_before + session_train_seconds;
        window_loss += loss_value;
        ++window_steps;
        window_examples += n;
        window_tokens += tokens;
        window_seconds += dt;
        recent_step = recent_step == 0 ? dt : 0.9 * recent_step + 0.1 * dt;
        if (st.step % tcfg.log_every == 0 || st.batch_in_epoch == spe) {
          metrics.write_record(json{{"type", "train"},
                             {"seed", seed},
                             {"step", st.step},
                             {"epoch", epoch_float()},
                             {"loss", window_loss / static_cast<double>(window_steps)},
                             {"lr", lr},
                             {"examples_per_second", window_examples / std::max(window_seconds, 1e-9)},
                             {"tokens_per_second", window_tokens / std::max(window_seconds, 1e-9)},
                             {"elapsed", now_elapsed()}});
          window_loss = window_seconds = 0;
          window_steps = window_examples = window_tokens = 0;
        }
        const double eta = static_cast<double>(total_steps - st.step) * recent_step;
        progress.update(st.step, epoch_float(), loss_value, lr, static_cast<double>(tokens) / std::max(dt, 1e-9), eta);
      }
      if (interrupted) break;
      if (!validate()) {
        interrupted = true;
        break;
      }
      ++st.epoch;
      st.batch_in_epoch = 0;
      save_last();
    }
    progress.break_line();
    if (interrupted) {
      save_last();
      std::cerr << fmt::format(
          "grassaudit train-nli: stopped by signal {} in seed {} at step {} (epoch {:.3f}); checkpoint saved to {}\n"
          "  continue with: grassaudit train-nli --resume {}\n",
          interrupt_signal(), seed, st.step, epoch_float(), last_path, last_path);
      outcome.interrupted = true;
      return outcome;
    }

    // ---- test on the best-validation weights ----
    NliModel best = fs::exists(best_path(seed)) ? load_nli_checkpoint(best_path(seed)).model : model;
    auto tr = evaluate(best, data.test.examples, tcfg.eval_batch, mcfg.window);
    if (!tr) {
      save_last();
      std::cerr << fmt::format("grassaudit train-nli: stopped by signal {} during the test evaluation of seed {}; "
                               "continue with: grassaudit train-nli --resume {}\n",
                               interrupt_signal(), seed, last_path);
      outcome.interrupted = true;
      return outcome;
    }
    metrics.write_record(json{{"type", "eval"}, {"seed", seed}, {"epoch", st.best_epoch}, {"step", st.step},
                       {"split", "test"}, {"accuracy", tr->accuracy}, {"loss", tr->loss},
                       {"examples", tr->examples}, {"elapsed", now_elapsed()}});
    SeedResult res;
    res.seed = seed;
    res.val_acc = st.best_val_acc.value_or(0.0);
    res.test_acc = tr->accuracy;
    res.test_loss = tr->loss;
    res.best_epoch = st.best_epoch;
    res.steps = st.step;
    res.wall_seconds = now_elapsed();
    res.train_seconds = st.train_seconds;
    completed.push_back(res);
    save_last();  // records the result, so a resume skips this seed
    std::cout << fmt::format("seed {}: best val accuracy {:.4f} (epoch {}), test accuracy {:.4f}, {} ({:.0f} s)\n",
                             seed, res.val_acc, res.best_epoch, res.test_acc, format_duration(res.wall_seconds),
                             res.wall_seconds);
  }

  // ---- summary over seeds, in the order given ----
  std::vector<double> val, test, walls;
  std::vector<uint64_t> done_seeds;
  std::vector<int64_t> best_epochs;
  double wall = 0, train_seconds = 0;
  for (uint64_t s : seeds)
    for (const auto& r : completed)
      if (r.seed == s) {
        done_seeds.push_back(s);
        val.push_back(r.val_acc);
        test.push_back(r.test_acc);
        walls.push_back(r.wall_seconds);
        best_epochs.push_back(r.best_epoch);
        wall += r.wall_seconds;
        train_seconds += r.train_seconds;
      }
  const std::string run_name = [&] {
    std::string n = fs::path(out).lexically_normal().filename().string();
    if (n.empty() || n == ".") n = fs::absolute(out).lexically_normal().parent_path().filename().string();
    return n;
  }();
  json summary{{"run", run_name},
               {"task", "snli"},
               {"head", mcfg.head},
               {"features", features},
               {"protocol", data.protocol},
               {"seeds", done_seeds},
               {"val_acc", val},
               {"test_acc", test},
               {"val_acc_mean", mean_of(val)},
               {"val_acc_std", sample_std(val)},
               {"test_acc_mean", mean_of(test)},
               {"test_acc_std", sample_std(test)},
               {"best_epochs", best_epochs},
               {"params", params},
               {"head_params", head_params},
               {"encoder_params", params - head_params},
               {"embedding_rows", rows},
               {"epochs", tcfg.epochs},
               {"batch", tcfg.batch},
               {"lr", tcfg.lr},
               {"d_model", mcfg.d_model},
               {"head_layers", mcfg.head_layers},
               {"encoder_layers", mcfg.encoder_layers},
               {"heads", mcfg.heads},
               {"d_ff", mcfg.d_ff},
               {"dropout", mcfg.dropout},
               {"max_sentence_tokens", tcfg.max_sentence_tokens},
               {"train_pairs", n_train},
               {"val_pairs", data.val.examples.size()},
               {"test_pairs", data.test.examples.size()},
               {"wall_seconds", wall},
               {"wall_seconds_per_seed", walls},
               {"train_seconds", train_seconds},
               {"threads", at::get_num_threads()},
               {"blas", blas_in_use()}};
  if (mcfg.head == "grassmann") {
    summary["d_proj"] = mcfg.d_proj;
    summary["window"] = mcfg.window;
    summary["stride"] = mcfg.stride;
    summary["pairing"] = "each token with the mean of its window (z_t ^ m_w), per mixing head";
  }
  write_file_atomic(out + "/summary.json", summary.dump(2) + "\n");
  std::cout << fmt::format(
      "{} head over {} seed(s): val accuracy {:.4f} ± {:.4f}, test accuracy {:.4f} ± {:.4f} (mean ± sample std); "
      "{} parameters; {} wall; artifacts in {}\n",
      mcfg.head, done_seeds.size(), mean_of(val), sample_std(val), mean_of(test), sample_std(test),
      format_count(params), format_duration(wall), out);
  outcome.completed = true;
  return outcome;
}

}  // namespace grassaudit
