#pragma once
// The audit gate: no perplexity without a causality audit of the exact weights evaluated.
// A leaky verdict quarantines the number: JSON keys get the prefix "quarantined_" and every
// printed figure is labelled LEAKY.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include <c10/core/Device.h>
#include <nlohmann/json_fwd.hpp>

#include "audit/causality_audit.h"
#include "core/language_model.h"
#include "core/lm_loss.h"
#include "text/lm_blocks.h"
#include "util/run_summary.h"

namespace grassaudit {

struct EvalStats {
  double loss = 0;     // mean next-token cross-entropy (nats)
  int64_t tokens = 0;  // scored positions
  double ppl() const;
};

// Mean cross-entropy over all blocks, in order, batch rows at a time, eval mode, no grad (the
// caller's train/eval mode is restored), summed in float64. loss_impl: the fused head (default)
// or the materialised logits; the two agree to ~1e-7 relative (tests/bench/test_bench_loss_impl).
// Returns nullopt if should_stop() turned true between batches.
std::optional<EvalStats> evaluate_lm(LanguageModel& model, const LmBlocks& blocks, int64_t batch,
                                     const c10::Device& device,
                                     const std::function<bool()>& should_stop = {},
                                     LossImpl loss_impl = LossImpl::kFused);

// The gate's audit settings for a training run: seq_len = the training L, both modes, the full
// length schedule for a causal model, stopping after the first length that proves a leak.
AuditOptions gate_audit_options(int64_t seq_len, int64_t trials, int64_t batch, uint64_t seed);

class AuditGate {
 public:
  explicit AuditGate(AuditOptions options) : options_(std::move(options)) {}
  // Audits the weights `model` holds now (a model on an accelerator is audited through an exact
  // CPU copy). Results are cached by weights_sha256, so evaluating the same weights twice
  // (best validation, then test) audits once.
  const AuditResult& audit(LanguageModel& model);
  const AuditOptions& options() const { return options_; }

 private:
  AuditOptions options_;
  std::map<std::string, AuditResult> cache_;
};

struct GatedEval {
  EvalStats stats;
  AuditResult audit;
  bool leaky() const { return audit.leaky(); }
};

// Audit first, then the loss. nullopt when interrupted (should_stop) during the loss.
std::optional<GatedEval> gated_evaluate(AuditGate& gate, LanguageModel& model, const LmBlocks& blocks,
                                        int64_t batch, const c10::Device& device,
                                        const std::function<bool()>& should_stop = {},
                                        LossImpl loss_impl = LossImpl::kFused);

// Sets j[key] (causal) or j["quarantined_" + key] (leaky) to ppl.
void put_ppl(nlohmann::json& j, const std::string& key, double ppl, bool leaky);

// The audit block stored beside every metric (summary.json "audit", and the outputs of eval and
// generate): the verdict, leak horizon, max effect and weights hash.
SummaryAudit summary_audit(const AuditResult& a);
nlohmann::json audit_brief(const AuditResult& a);  // to_json(summary_audit(a))

// "valid perplexity 123.45 (audit: causal, weights 1a2b3c4d...)" or
// "LEAKY valid figure 3.21 -- NOT a valid perplexity (audit: leaky, horizon 15, ...)".
std::string describe_ppl(const std::string& what, double ppl, const AuditResult& a);

}  // namespace grassaudit
