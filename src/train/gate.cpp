#include "train/gate.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>
#include <torch/nn/module.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "audit/audit_option_fields.h"
#include "audit/audit_shard.h"
#include "formats/builtin/builtin_target.h"
#include "audit/incremental_audit.h"
#include "core/checkpoint.h"
#include "runtime/distributed.h"
#include "runtime/rng_guard.h"
#include "train/lm_data.h"

namespace grassaudit {

double EvalStats::ppl() const { return std::exp(loss); }

std::optional<EvalStats> evaluate_lm(LanguageModel& model, const LmBlocks& blocks, int64_t batch,
                                     const c10::Device& device, const std::function<bool()>& should_stop,
                                     LossImpl loss_impl) {
  const bool was_training = model->is_training();
  model->eval();
  at::NoGradGuard no_grad;
  double total = 0;  // summed in double, batch by batch
  int64_t tokens = 0;
  bool stopped = false;
  // Data-parallel: batch k is evaluated by rank k % world, whole (the same rows as in one
  // process, so the same float32 sums), and the float64 sums are added over the ranks.
  const int64_t world = dist::world_size(), rank = dist::rank();
  for (int64_t first = rank * batch; first < blocks.num_blocks; first += world * batch) {
    if (should_stop && should_stop()) {
      stopped = true;
      break;
    }
    const int64_t n = std::min(batch, blocks.num_blocks - first);
    auto [x, y] = make_batch_range(blocks, first, n);
    x = x.to(device);
    y = y.to(device);
    const HeadLossSum s = lm_loss_sum(model, x, y, loss_impl);
    total += s.sum;
    tokens += s.count;
  }
  model->train(was_training);
  if (stopped) return std::nullopt;
  if (dist::active()) {
    auto sums = at::tensor({total, static_cast<double>(tokens)}, at::kDouble);
    dist::allreduce_sum(sums);
    total = sums[0].item<double>();
    tokens = static_cast<int64_t>(sums[1].item<double>());
  }
  EvalStats s;
  s.tokens = tokens;
  s.loss = tokens > 0 ? total / static_cast<double>(tokens) : std::nan("");
  return s;
}

AuditOptions gate_audit_options(int64_t seq_len, int64_t trials, int64_t batch, uint64_t seed) {
  // The gate's settings, by the audit option table's keys (audit/audit_option_fields.h); every
  // other option as the CLI's default. Both modes, the gradient method and the strict contract.
  // stop_when_leaky: a leak proven at L quarantines the number; the shorter lengths' float64
  // re-runs would cost more than the rest of the audit (every cut of a leaky model moves) to
  // refine the horizon only. Causal models still get the whole schedule.
  // past_horizon off: with no window the past horizon decides nothing. Batch independence
  // (train-mode batch statistics would leak across rows of consecutive text) and length
  // independence stay on: both are cheap next to the future tables.
  return audit_options_from_json({{"seq_len", seq_len},
                                  {"trials", trials},
                                  {"batch", batch},
                                  {"seed", seed},
                                  {"mode", "both"},
                                  {"gradient_check", true},
                                  {"stop_when_leaky", true},
                                  {"past_horizon", false}});
}

namespace {
// The gate probes the final hidden state: logits_t = E hidden_t is position-wise with E of full
// column rank, so the verdict is the same as on logits (tests/audit checks both agree), and it
// skips the V-wide head, most of the forward cost at paper scale (2 x 256 x 30522 FLOPs per
// token against ~9.5M for six layers). That is what keeps the gate within its cost budget
// (the cpu-small runs of reports/runs were gated on logits: 6% of an epoch for past).
constexpr const char* kGateOutput = "hidden";

bool on_cpu(LanguageModel& model) {
  for (const auto& p : model->parameters())
    if (!p.device().is_cpu()) return false;
  return true;
}
}  // namespace

namespace {
// The incremental path too (generation uses it), cheaply: one batch of two rows, two partitions
// (a prefill then single steps; random chunks) and the isolation runs. A model proven leaky is
// quarantined already; the future mixer has no incremental path (said in a note).
void check_incremental_path(BuiltinLmTarget& target, const AuditOptions& o, AuditResult& r) {
  if (r.leaky()) return;
  if (const auto missing = target.incremental_missing(); !missing.empty()) {
    r.notes.push_back("incremental path not audited: " + missing);
    return;
  }
  IncrementalOptions io;
  io.seq_len = o.seq_len;
  io.seed = o.seed;
  io.cheap = true;
  const IncrementalResult inc = run_incremental_audit(target, io);
  attach_incremental(inc, r);
  r.seconds_by_check.emplace_back("incremental", inc.seconds);
}
}  // namespace

const AuditResult& AuditGate::audit(LanguageModel& model) {
  const std::string hash = weights_sha256(*model);
  if (auto it = cache_.find(hash); it != cache_.end()) return it->second;
  const ShardedAuditScope sharded;  // data-parallel: every rank audits its share of the probe rows
  AuditResult result;
  if (on_cpu(model)) {
    BuiltinLmTarget target(model, kGateOutput, hash);  // the same object: no second hash
    result = run_causality_audit(target, options_);
    check_incremental_path(target, options_, result);
  } else {
    LanguageModel copy{nullptr};
    {
      CpuRngGuard keep;
      copy = LanguageModel(model->config());
    }
    {
      at::NoGradGuard no_grad;
      auto src = model->named_parameters();
      for (auto& kv : copy->named_parameters()) kv.value().copy_(src[kv.key()].to(at::kCPU));
      auto srcb = model->named_buffers();
      for (auto& kv : copy->named_buffers()) kv.value().copy_(srcb[kv.key()].to(at::kCPU));
    }
    copy->train(model->is_training());
    BuiltinLmTarget target(copy, kGateOutput);
    result = run_causality_audit(target, options_);
    check_incremental_path(target, options_, result);
  }
  if (!result.weights_sha256.empty() && result.weights_sha256 != hash)
    throw std::logic_error(fmt::format("audit gate: audited weights {} differ from the evaluated weights {}",
                                       result.weights_sha256, hash));
  result.weights_sha256 = hash;
  return cache_.emplace(hash, std::move(result)).first->second;
}

std::optional<GatedEval> gated_evaluate(AuditGate& gate, LanguageModel& model, const LmBlocks& blocks,
                                        int64_t batch, const c10::Device& device,
                                        const std::function<bool()>& should_stop, LossImpl loss_impl) {
  // Gradients left from the last training step are not the audit's business; drop them so a
  // gradient check cannot accumulate into them.
  for (auto& p : model->parameters()) p.mutable_grad() = at::Tensor();
  GatedEval g;
  g.audit = gate.audit(model);
  auto stats = evaluate_lm(model, blocks, batch, device, should_stop, loss_impl);
  if (!stats) return std::nullopt;
  g.stats = *stats;
  return g;
}

void put_ppl(nlohmann::json& j, const std::string& key, double ppl, bool leaky) {
  j[leaky ? "quarantined_" + key : key] = ppl;
}

SummaryAudit summary_audit(const AuditResult& a) {
  return SummaryAudit{verdict_name(a.verdict()), a.leak_horizon, a.max_effect, a.weights_sha256};
}

nlohmann::json audit_brief(const AuditResult& a) { return to_json(summary_audit(a)); }

std::string describe_ppl(const std::string& what, double ppl, const AuditResult& a) {
  const std::string w = a.weights_sha256.substr(0, 12);
  if (a.leaky())
    return fmt::format("LEAKY {} figure {:.2f} -- NOT a valid perplexity (audit: leaky, leak horizon {}, "
                       "max effect {:.3g}, weights {})",
                       what, ppl, a.leak_horizon, a.max_effect, w);
  return fmt::format("{} perplexity {:.2f} (audit: causal, weights {})", what, ppl, w);
}

}  // namespace grassaudit
