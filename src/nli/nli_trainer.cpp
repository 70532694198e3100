#include "nli/nli_trainer.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <torch/optim/adamw.h>
#include <torch/utils.h>

#include <cmath>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "runtime/distributed.h"
#include "core/row_dropout.h"
#include "runtime/runtime.h"
#include "core/checkpoint.h"
#include "runtime/rng_guard.h"
#include "nli/nli_checkpoint.h"
#include "nli/nli_data.h"
#include "text/vocab.h"
#include "text/wordpiece.h"
#include "train/interrupt.h"
#include "train/loop.h"
#include "train/provenance.h"
#include "train/rank_output.h"
#include "train/run_setup.h"
#include "train/progress.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/format_count.h"
#include "util/sha256.h"
#include "util/jsonl_log.h"
#include "util/run_summary.h"

namespace grassaudit {
namespace {

using nlohmann::json;

// Position of one seed's training plus its best validation, stored under meta["state"].
struct SeedState {
  LoopState loop;
  std::optional<double> best_val_acc;
  int64_t best_epoch = 0;  // 1-based epoch of the best validation accuracy
  std::optional<LogExtent> metrics_extent;  // the seed's metrics file when the checkpoint was taken

  json to_json() const {
    return task_state_json(
        {{"best_val_acc", best_val_acc ? json(*best_val_acc) : json(nullptr)}, {"best_epoch", best_epoch}}, loop,
        "examples_seen", metrics_extent);
  }
  static SeedState from_json(const json& j, const std::string& where) {
    SeedState s;
    read_task_state(j, "examples_seen", where, s.loop, s.metrics_extent, [&] {
      if (!j.at("best_val_acc").is_null()) s.best_val_acc = j.at("best_val_acc").get<double>();
      s.best_epoch = j.at("best_epoch").get<int64_t>();
    });
    return s;
  }
};

struct SeedResult {
  uint64_t seed = 0;
  double val_acc = 0, test_acc = 0, test_loss = 0;
  // Grassmann head only: test accuracy of the same weights with every Pluecker feature zeroed
  // (g_t = b_plu): how much of the head's result the geometry carries.
  std::optional<double> test_acc_pluecker_zeroed;
  int64_t best_epoch = 0, steps = 0;
  double wall_seconds = 0, train_seconds = 0;
  json to_json() const {
    json j{{"seed", seed},         {"val_acc", val_acc},       {"test_acc", test_acc},
           {"test_loss", test_loss}, {"best_epoch", best_epoch}, {"steps", steps},
           {"wall_seconds", wall_seconds}, {"train_seconds", train_seconds}};
    if (test_acc_pluecker_zeroed) j["test_acc_pluecker_zeroed"] = *test_acc_pluecker_zeroed;
    return j;
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
    if (j.contains("test_acc_pluecker_zeroed")) r.test_acc_pluecker_zeroed = j["test_acc_pluecker_zeroed"].get<double>();
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
  // Data-parallel: batch k is evaluated whole by rank k % world; the sums are added over ranks.
  // A signal stops the evaluation only in one process (the ranks' loop stops them together).
  const int64_t world = dist::world_size();
  for (int64_t first = dist::rank() * batch; first < n; first += world * batch) {
    if (!dist::active() && interrupt_requested()) {
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
  if (dist::active()) {
    auto sums = at::tensor({loss_sum, static_cast<double>(correct)}, at::kDouble);
    dist::allreduce_sum(sums);
    loss_sum = sums[0].item<double>();
    correct = static_cast<int64_t>(sums[1].item<double>());
  }
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


namespace {

// Configs, seeds and position: from the request, or from the checkpoint being resumed.
struct NliRun : RequestedConfigs<NliConfig, NliTrainConfig> {
  using RequestedConfigs::RequestedConfigs;
  std::vector<uint64_t> seeds;
  std::string train_file;
  std::vector<SeedResult> completed;
  std::optional<LoadedNliCheckpoint> checkpoint;
  uint64_t resume_seed = 0;
  SeedState resume_state;

  bool is_done(uint64_t s) const {
    for (const auto& r : completed)
      if (r.seed == s) return true;
    return false;
  }
};

NliRun resolve_nli_run(const NliTrainRequest& req) {
  NliRun r(req);
  r.seeds = req.seeds;
  r.train_file = req.train_file;
  if (r.resuming) {
    r.checkpoint = load_nli_checkpoint(req.resume);
    const json& m = r.checkpoint->meta;
    if (!m.contains("train") || !m.contains("state") || !m.contains("seeds") || !m.contains("seed"))
      throw InputError(fmt::format("{}: not a train-nli training checkpoint (no train config or state)", req.resume));
    try {
      r.model = r.checkpoint->config;
      r.train = nli_train_config_from_json(m["train"]);
      r.seeds = m["seeds"].get<std::vector<uint64_t>>();
      r.resume_seed = m["seed"].get<uint64_t>();
      r.train_file = m.value("train_file", std::string());
      for (const auto& c : m.value("completed", json::array())) r.completed.push_back(SeedResult::from_json(c));
    } catch (const json::exception& e) {
      throw InputError(fmt::format("{}: checkpoint meta is incomplete ({})", req.resume, e.what()));
    }
    r.resume_state = SeedState::from_json(m["state"], req.resume);
  }
  r.train.validate();
  if (r.seeds.empty()) throw InputError("no seeds given");
  return r;
}

// The data, the id -> row map and the step counts every seed shares.
struct NliPrepared {
  NliData data;
  at::Tensor vocab_map;
  int64_t rows = 0, n_train = 0, steps_per_epoch = 0, total_steps = 0, warmup = 0;
};

NliPrepared load_nli(const NliTrainRequest& req, NliRun& run) {
  const std::string vocab_path = nli_vocab_path(req.data_dir);
  const std::string vocab_bytes = read_file(vocab_path);
  WordPieceTokenizer tok(Vocab::parse_bert(vocab_bytes, vocab_path));
  NliDataOptions dopt;
  dopt.data_dir = req.data_dir;
  dopt.train_file = run.train_file;
  dopt.holdout = run.train.holdout;
  dopt.max_examples = run.train.max_examples;
  dopt.max_sentence_tokens = run.train.max_sentence_tokens;
  NliPrepared p;
  p.data = load_nli_data(tok, dopt);
  p.data.file_sha256["bert-base-uncased/vocab.txt"] = sha256_hex(vocab_bytes);
  std::cerr << runtime_banner();  // after the data: a missing file is reported as one line
  p.vocab_map = build_vocab_map(tok.vocab(), p.data.train.examples, &p.rows);
  NliConfig& m = run.model;
  if (run.resuming && (m.vocab_rows != p.rows || m.full_vocab != tok.vocab().size()))
    throw InputError(fmt::format("{}: the training data differ from the checkpoint's ({} embedding rows now, {} then)",
                                 req.resume, p.rows, m.vocab_rows));
  m.full_vocab = tok.vocab().size();
  m.vocab_rows = p.rows;
  m.max_len = std::max<int64_t>(m.max_len,
                                (2 * run.train.max_sentence_tokens + 3 + m.window - 1) / m.window * m.window);
  m.validate();
  p.n_train = static_cast<int64_t>(p.data.train.examples.size());
  p.steps_per_epoch = (p.n_train + run.train.batch - 1) / run.train.batch;
  p.total_steps = p.steps_per_epoch * run.train.epochs;
  p.warmup = static_cast<int64_t>(std::llround(run.train.warmup_fraction * static_cast<double>(p.total_steps)));
  const LoopState& rs = run.resume_state.loop;
  if (run.resuming && (rs.steps_per_epoch != p.steps_per_epoch || rs.total_steps != p.total_steps))
    throw InputError(fmt::format("{}: the training data differ from the checkpoint's ({} steps per epoch now, {} then)",
                                 req.resume, p.steps_per_epoch, rs.steps_per_epoch));
  return p;
}

struct NliPaths {
  std::string out, last;
  std::string metrics(uint64_t s) const { return fmt::format("{}/metrics-seed{}.jsonl", out, s); }
  std::string best(uint64_t s) const { return fmt::format("{}/checkpoints/best-seed{}.ckpt", out, s); }
};

NliPaths prepare_nli_out_dir(const NliTrainRequest& req, const NliRun& run) {
  NliPaths p{req.out_dir, req.out_dir + "/checkpoints/last.ckpt"};
  std::vector<std::string> run_files{p.last, p.out + "/summary.json"};
  for (uint64_t s : run.seeds) run_files.push_back(p.metrics(s));
  prepare_run_folder(p.out, p.last, !run.resuming, run_files, "summary.json, metrics or checkpoints/last.ckpt");
  return p;
}

struct NliCounts {
  std::string features;
  int64_t params = 0, head_params = 0;
};

// Prints and saves the resolved config, and the parameter counts of both heads side by side.
NliCounts record_nli_config(const NliRun& run, const NliPrepared& p, const NliPaths& paths) {
  const NliConfig& m = run.model;
  const NliTrainConfig& t = run.train;
  NliCounts c;
  c.features = nli_features_description(m, p.data.offline);
  c.params = nli_parameter_count(m, &c.head_params);
  NliConfig other = m;
  other.head = m.head == "grassmann" ? "transformer" : "grassmann";
  int64_t other_head_params = 0;
  const int64_t other_params = nli_parameter_count(other, &other_head_params);
  const NliData& d = p.data;
  const json resolved{{"model", to_json(m)},
                      {"train", to_json(t)},
                      {"seeds", run.seeds},
                      {"protocol", d.protocol},
                      {"features", c.features},
                      {"train_file", run.train_file},
                      {"data", {{"train", d.train.source}, {"val", d.val.source}, {"test", d.test.source},
                                {"train_pairs", p.n_train}, {"val_pairs", d.val.examples.size()},
                                {"test_pairs", d.test.examples.size()},
                                {"truncated_pairs", d.train.truncated + d.val.truncated + d.test.truncated}}}};
  dist::check_same_everywhere(
      "configs or data", json{{"resolved", resolved}, {"data", d.file_sha256}, {"resume", run.resuming},
                              {"resume_seed", run.resume_seed}, {"resume_step", run.resume_state.loop.step}}
                             .dump());
  if (dist::is_main()) write_file_atomic(paths.out + "/config.json", resolved.dump(2) + "\n");
  std::cout << "resolved config:\n" << resolved.dump(2) << std::endl;
  std::cerr << fmt::format(
      "SNLI, {} head: {} parameters = head {} + shared encoder {} ({} embedding rows of {} WordPiece ids); the {} "
      "head with the same settings: {} = head {} + the same encoder\n"
      "protocol: {}\n{} train / {} val / {} test pairs, batch {}, {} steps per epoch, {} epochs, seeds {}\n",
      m.head, format_count(c.params), format_count(c.head_params), format_count(c.params - c.head_params),
      format_count(p.rows), format_count(m.full_vocab), other.head, format_count(other_params),
      format_count(other_head_params), d.protocol, format_count(p.n_train), format_count(d.val.examples.size()),
      format_count(d.test.examples.size()), t.batch, format_count(p.steps_per_epoch), t.epochs, json(run.seeds).dump());
  return c;
}

// One seed's training as a task of the shared loop: length-bucketed batches, 3-way
// cross-entropy, validation accuracy per epoch, best-seed checkpoints.
class NliSeedTask : public TrainingTask {
 public:
  NliSeedTask(NliRun& run, const NliPrepared& p, const NliPaths& paths, uint64_t seed, NliModel model,
              SeedState& state, torch::optim::AdamW& optimizer, JsonlLog& metrics, Progress& progress)
      : run_(run), p_(p), paths_(paths), seed_(seed), model_(std::move(model)), st_(state), optimizer_(optimizer),
        metrics_(metrics), progress_(progress), clock_(state.loop.elapsed) {}

  void begin_epoch(int64_t epoch) override {
    order_ = epoch_batches(p_.data.train.examples, run_.train.batch, seed_, epoch);
    if (static_cast<int64_t>(order_.size()) != st_.loop.steps_per_epoch)
      throw std::logic_error("epoch_batches: wrong batch count");
  }

  // Batch `index` is the global batch; data-parallel, this rank keeps its contiguous rows of it,
  // padded as the whole batch is (so every tensor, and every dropout mask drawn for the whole
  // batch by core/row_dropout.h, matches the one-process step row by row).
  StepLoss step_loss(int64_t index) override {
    const auto& rows = order_[static_cast<size_t>(index)];
    const int64_t n = static_cast<int64_t>(rows.size());
    auto b = make_nli_batch(p_.data.train.examples, rows.data(), n, run_.model.window);
    const int64_t tokens = b.mask.sum().item<int64_t>();
    const dist::RowShare mine = dist::row_share(n);
    StepLoss out{at::Tensor(), n, tokens, static_cast<double>(mine.count) / static_cast<double>(n)};
    if (mine.count == 0) {
      out.loss = at::zeros({}, at::kFloat).requires_grad_(true);
    } else {
      auto part = [&](const at::Tensor& t) { return mine.count == n ? t : t.narrow(0, mine.begin, mine.count); };
      const DropoutRowsScope drop_rows(n, mine.begin, mine.count);
      auto logits = model_->forward(part(b.ids), part(b.segments), part(b.mask));  // [rows, 3]
      out.loss = at::cross_entropy_loss(logits, part(b.labels));
    }
    if (dist::active() && n < dist::world_size()) dist::broadcast_cpu_rng();
    return out;
  }

  bool validate() override {
    progress_.break_line();
    auto r = evaluate(model_, p_.data.val.examples, run_.train.eval_batch, run_.model.window);
    if (!r) return false;
    const int64_t epoch1 = st_.loop.epoch + 1;
    metrics_.write_record(json{{"type", "eval"}, {"seed", seed_}, {"epoch", epoch1}, {"step", st_.loop.step},
                               {"split", "val"}, {"accuracy", r->accuracy}, {"loss", r->loss},
                               {"examples", r->examples}, {"elapsed", clock_.elapsed()}});
    const bool best = !st_.best_val_acc || r->accuracy > *st_.best_val_acc;
    std::cerr << fmt::format("seed {} epoch {}: val accuracy {:.4f} (loss {:.4f}){}\n", seed_, epoch1, r->accuracy,
                             r->loss, best ? ", best so far" : "");
    if (best) {
      st_.best_val_acc = r->accuracy;
      st_.best_epoch = epoch1;
      if (dist::is_main()) save_nli_checkpoint(paths_.best(seed_), model_, &optimizer_, meta());
    }
    return true;
  }

  json train_record(const LogWindow& w, double lr) override {
    return json{{"type", "train"},
                {"seed", seed_},
                {"step", st_.loop.step},
                {"epoch", st_.loop.epoch_float()},
                {"loss", w.mean_loss()},
                {"lr", lr},
                {"examples_per_second", w.units_per_second()},
                {"tokens_per_second", w.tokens_per_second()},
                {"elapsed", clock_.elapsed()}};
  }

  void save_last() override {
    if (!all_finite(*model_))
      throw std::runtime_error(
          fmt::format("seed {}: the weights after step {} are not finite; not saving them", seed_, st_.loop.step));
    if (dist::is_main()) save_nli_checkpoint(paths_.last, model_, &optimizer_, meta());
  }

  [[noreturn]] void diverged(int64_t failed, double loss, double lr) override {
    throw std::runtime_error(fmt::format(  // steps counted from 1, as in the metrics file
        "training loss is {} at step {} (seed {}); stopped without saving; lower --lr (now {:.3g})",
        non_finite_name(loss), failed, seed_, lr));
  }

  NliModel& model() { return model_; }
  const RunClock& clock() const { return clock_; }

 private:
  // The seed's log is synced before the checkpoint that counts its records is written.
  json meta() {
    st_.loop.elapsed = clock_.elapsed();
    metrics_.sync();
    st_.metrics_extent = metrics_.extent();
    json done = json::array();
    for (const auto& r : run_.completed) done.push_back(r.to_json());
    return json{{"train", to_json(run_.train)}, {"seeds", run_.seeds},    {"seed", seed_},
                {"state", st_.to_json()},       {"completed", done},      {"train_file", run_.train_file},
                {"protocol", p_.data.protocol}};
  }

  NliRun& run_;
  const NliPrepared& p_;
  const NliPaths& paths_;
  uint64_t seed_;
  NliModel model_;
  SeedState& st_;
  torch::optim::AdamW& optimizer_;
  JsonlLog& metrics_;
  Progress& progress_;
  RunClock clock_;
  std::vector<std::vector<int64_t>> order_;
};

// Trains one seed (fresh or resumed), tests its best-validation weights and appends the result to
// run.completed. False when a signal stopped it (last.ckpt saved, message printed).
// The best-validation weights of `seed` on every rank (`last` when no best checkpoint was
// written). Data-parallel: rank 0, which writes best-seed*.ckpt, decides and sends them.
NliModel best_weights(NliModel last, const NliRun& run, const NliPrepared& p, const NliPaths& paths, uint64_t seed) {
  const std::string path = paths.best(seed);
  return best_weights_from_rank0(
             path, [&] { return load_nli_checkpoint(path).model; }, [&] { return NliModel(run.model, p.vocab_map); })
      .value_or(last);
}

struct SeedTest {
  EvalResult test;
  std::optional<EvalResult> pluecker_zeroed;  // Grassmann head: the ablation the report cites
};

// The test split on `best` and, for a Grassmann head, on the same weights with every Pluecker
// feature zeroed (g_t = b_plu); nullopt when a signal stopped either.
std::optional<SeedTest> test_seed(NliModel& best, const NliRun& run, const NliPrepared& p) {
  SeedTest out;
  auto tr = evaluate(best, p.data.test.examples, run.train.eval_batch, run.model.window);
  if (!tr) return std::nullopt;
  out.test = *tr;
  if (run.model.head != "grassmann") return out;
  best->set_ablate_pluecker(true);
  auto ablated = evaluate(best, p.data.test.examples, run.train.eval_batch, run.model.window);
  best->set_ablate_pluecker(false);
  if (!ablated) return std::nullopt;
  out.pluecker_zeroed = *ablated;
  return out;
}

bool train_seed(const NliTrainRequest& req, NliRun& run, const NliPrepared& p, const NliPaths& paths, uint64_t seed,
                bool resume_this) {
  const NliTrainConfig& t = run.train;
  SeedState st;
  NliModel model{nullptr};
  if (resume_this) {
    model = run.checkpoint->model;
    st = run.resume_state;
  } else {
    torch::manual_seed(seed);
    model = NliModel(run.model, p.vocab_map);
    st.loop.steps_per_epoch = p.steps_per_epoch;
    st.loop.total_steps = p.total_steps;
  }
  model->train();
  auto optimizer = make_adamw(*model, adamw_settings(t));
  if (resume_this) load_nli_optimizer_and_rng(req.resume, *optimizer);
  broadcast_weights(*model);  // every rank starts from rank 0's weights
  // Everything the resume needs has loaded: only now is the seed's log cut back to the checkpoint.
  if (resume_this && dist::is_main())
    restore_metrics_log(paths.metrics(seed), st.metrics_extent, st.loop.step, req.resume);
  JsonlLog metrics(dist::is_main() ? paths.metrics(seed) : "/dev/null", /*append=*/resume_this || !dist::is_main());
  std::cerr << fmt::format("seed {}: {}\n", seed,
                           resume_this ? fmt::format("resuming {} at step {} (epoch {}, batch {} of {})", req.resume,
                                                     st.loop.step, st.loop.epoch + 1, st.loop.batch_in_epoch,
                                                     p.steps_per_epoch)
                                       : std::string("new model"));
  Progress progress(p.total_steps, t.log_every, req.plain_progress);
  NliSeedTask task(run, p, paths, seed, model, st, *optimizer, metrics, progress);
  const LoopSettings loop = loop_settings(t, p.warmup, p.total_steps);
  const LoopEnd end = run_training_loop(loop, task, *model, *optimizer, st.loop, metrics, progress);
  progress.break_line();
  if (end == LoopEnd::kInterrupted) {
    save_after_signal(task, "train-nli", fmt::format(" in seed {}", seed), st.loop, paths.last);
    return false;
  }

  // ---- test on the best-validation weights ----
  NliModel best = best_weights(task.model(), run, p, paths, seed);
  const auto tested = test_seed(best, run, p);
  if (!tested) {
    task.save_last();
    std::cerr << fmt::format("grassaudit train-nli: stopped by {} during the test evaluation of seed {}; "
                             "continue with: grassaudit train-nli --resume {}\n",
                             interrupt_cause(), seed, paths.last);
    return false;
  }
  const EvalResult* tr = &tested->test;
  const EvalResult* ablated = tested->pluecker_zeroed ? &*tested->pluecker_zeroed : nullptr;
  const double elapsed = task.clock().elapsed();
  metrics.write_record(json{{"type", "eval"}, {"seed", seed}, {"epoch", st.best_epoch}, {"step", st.loop.step},
                            {"split", "test"}, {"accuracy", tr->accuracy}, {"loss", tr->loss},
                            {"examples", tr->examples}, {"elapsed", elapsed}});
  if (ablated)
    metrics.write_record(json{{"type", "eval"}, {"seed", seed}, {"epoch", st.best_epoch}, {"step", st.loop.step},
                              {"split", "test"}, {"ablation", "pluecker_zeroed"}, {"accuracy", ablated->accuracy},
                              {"loss", ablated->loss}, {"examples", ablated->examples}, {"elapsed", elapsed}});
  SeedResult res;
  res.seed = seed;
  res.val_acc = st.best_val_acc.value_or(0.0);
  res.test_acc = tr->accuracy;
  res.test_loss = tr->loss;
  if (ablated) res.test_acc_pluecker_zeroed = ablated->accuracy;
  res.best_epoch = st.best_epoch;
  res.steps = st.loop.step;
  res.wall_seconds = elapsed;
  res.train_seconds = st.loop.train_seconds;
  run.completed.push_back(res);
  task.save_last();  // records the result, so a resume skips this seed
  std::cout << fmt::format("seed {}: best val accuracy {:.4f} (epoch {}), test accuracy {:.4f}, {} ({:.0f} s)\n", seed,
                           res.val_acc, res.best_epoch, res.test_acc, format_duration(res.wall_seconds),
                           res.wall_seconds);
  return true;
}

// summary.json (util/run_summary.h) over the seeds, in the order given; and the one-line result.
void write_nli_summary(const NliRun& run, const NliPrepared& p, const NliPaths& paths, const NliCounts& counts) {
  const NliConfig& m = run.model;
  std::vector<double> val, test, walls, zeroed;
  std::vector<uint64_t> done_seeds;
  std::vector<long long> best_epochs;
  double wall = 0, train_seconds = 0;
  for (uint64_t s : run.seeds)
    for (const auto& r : run.completed)
      if (r.seed == s) {
        done_seeds.push_back(s);
        val.push_back(r.val_acc);
        test.push_back(r.test_acc);
        if (r.test_acc_pluecker_zeroed) zeroed.push_back(*r.test_acc_pluecker_zeroed);
        walls.push_back(r.wall_seconds);
        best_epochs.push_back(r.best_epoch);
        wall += r.wall_seconds;
        train_seconds += r.train_seconds;
      }
  RunSummary summary;
  summary.run = run_name_of(paths.out);
  summary.task = "snli";
  SnliSummary& n = summary.snli;
  n.head = m.head;
  n.features = counts.features;
  n.protocol = p.data.protocol;
  n.seeds = done_seeds;
  n.val_acc = val;
  n.test_acc = test;
  n.val_acc_mean = mean_of(val);
  n.val_acc_std = sample_std(val);
  n.test_acc_mean = mean_of(test);
  n.test_acc_std = sample_std(test);
  n.best_epochs = best_epochs;
  summary.params = static_cast<double>(counts.params);
  n.head_params = counts.head_params;
  n.encoder_params = counts.params - counts.head_params;
  n.embedding_rows = p.rows;
  n.epochs = static_cast<double>(run.train.epochs);
  n.batch = run.train.batch;
  n.lr = run.train.lr;
  n.d_model = m.d_model;
  n.head_layers = m.head_layers;
  n.encoder_layers = m.encoder_layers;
  n.heads = m.heads;
  n.d_ff = m.d_ff;
  n.dropout = m.dropout;
  n.max_sentence_tokens = run.train.max_sentence_tokens;
  n.train_pairs = p.n_train;
  n.val_pairs = static_cast<long long>(p.data.val.examples.size());
  n.test_pairs = static_cast<long long>(p.data.test.examples.size());
  summary.wall_seconds = wall;
  n.wall_seconds_per_seed = walls;
  summary.train_seconds = train_seconds;
  summary.threads = at::get_num_threads();
  summary.blas = blas_in_use();
  summary.world_size = dist::world_size();
  summary.provenance = run_provenance(ProvenanceInputs{p.data.file_sha256, "cpu", dist::world_size()});
  if (m.head == "grassmann") {
    n.d_proj = m.d_proj;
    n.window = m.window;
    n.stride = m.stride;
    n.pairing = "each token with the mean of its window (z_t ^ m_w), per mixing head";
    // Same best weights, every Pluecker feature zeroed (per seed, in seed order); a seed
    // finished by an older build has none, and then the list is shorter than "seeds".
    n.test_acc_pluecker_zeroed = zeroed;
    if (zeroed.size() == test.size()) {
      n.test_acc_pluecker_zeroed_mean = mean_of(zeroed);
      n.test_acc_pluecker_zeroed_std = sample_std(zeroed);
    }
  }
  if (dist::is_main()) write_file_atomic(paths.out + "/summary.json", to_json(summary).dump(2) + "\n");
  std::cout << fmt::format(
      "{} head over {} seed(s): val accuracy {:.4f} ± {:.4f}, test accuracy {:.4f} ± {:.4f} (mean ± sample std); "
      "{} parameters; {} wall; artifacts in {}\n",
      m.head, done_seeds.size(), mean_of(val), sample_std(val), mean_of(test), sample_std(test),
      format_count(counts.params), format_duration(wall), paths.out);
}

}  // namespace

NliOutcome run_nli_training(const NliTrainRequest& req) {
  dist::init_from_env("cpu", req.dist_timeout_seconds);  // launched by torchrun: join its group
  const RankOutputGuard print_once;
  NliRun run = resolve_nli_run(req);
  const NliPrepared p = load_nli(req, run);
  const NliPaths paths = prepare_nli_out_dir(req, run);
  const NliCounts counts = record_nli_config(run, p, paths);
  InterruptGuard interrupt_guard;
  NliOutcome outcome;
  outcome.out_dir = paths.out;
  bool first_session_seed = true;
  for (uint64_t seed : run.seeds) {
    if (run.is_done(seed)) continue;
    const bool resume_this = run.resuming && first_session_seed && seed == run.resume_seed;
    if (run.resuming && first_session_seed && seed != run.resume_seed && !run.is_done(run.resume_seed))
      throw InputError(fmt::format("{}: checkpoint is for seed {}, but seed {} comes first and is not done", req.resume,
                                   run.resume_seed, seed));
    first_session_seed = false;
    if (!train_seed(req, run, p, paths, seed, resume_this)) {
      outcome.interrupted = true;
      return outcome;
    }
  }
  write_nli_summary(run, p, paths, counts);
  outcome.completed = true;
  return outcome;
}

}  // namespace grassaudit
