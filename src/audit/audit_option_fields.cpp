#include "audit/audit_option_fields.h"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "util/config_json.h"
#include "util/error.h"

namespace grassaudit {

const std::vector<Field<AuditOptions>>& audit_option_fields() {
  using O = AuditOptions;
  static const std::vector<Field<O>> fields = {
      // Set with the target (the CLI's --seq-len, a file's length, the package's seq_len): no flag.
      {"seq_len", &O::seq_len, at_least(2)},
      {"batch", &O::batch, at_least(1), "batch", "probe rows per forward pass"},
      {"trials", &O::trials, at_least(1), "trials", "independent trials (base sequences)"},
      {"mode", &O::mode, one_of({"eval", "train", "both"}), "mode", "eval | train | both"},
      {"seed", &O::seed, any_value(), "seed", "seed for probes (and untrained weights)"},
      {"gradient_check", &O::gradient_check, any_value(), "no-gradient-check", "skip the gradient method", false},
      {"seq_lens", &O::seq_lens, at_least(2), "seq-lens", "override the length schedule, e.g. 64,63,32"},
      // A model file's declared range (file_audit_options): no flag.
      {"min_seq_len", &O::min_seq_len, at_least(1)},
      {"lengths_why", &O::lengths_why, any_value()},
      // The training gate's setting: no flag.
      {"stop_when_leaky", &O::stop_when_leaky, any_value()},
      {"lookahead", &O::lookahead, at_least(0), "allow-lookahead",
       "contract: y_t may read x_{t+1..t+K} (streaming right context, codec lookahead)"},
      {"window", &O::window, at_least(1), "window",
       "contract: y_t may read only x_{t-W+1..t} (plus the lookahead); W >= 1"},
      {"length_check", &O::length_check, any_value(), "no-length-check",
       "skip length independence (prefix runs: a traced model runs at its traced length only)", false},
      {"localise", &O::localise, any_value(), "no-localise",
       "skip naming where a leak enters (the modules or graph nodes that read their own inputs' future)", false},
      {"batch_check", &O::batch_check, any_value(), "no-batch-check",
       "skip batch independence (a traced model may run at its traced batch only)", false},
      // The training gate's setting (its contract has no window, so the past horizon decides nothing): no flag.
      {"past_horizon", &O::past_horizon, any_value()},
      {"train_by_proof", &O::train_by_proof, any_value(), "no-train-proof",
       "probe train mode even when the model's code proves it computes what eval mode does\n"
       "(forward never reads `training` and draws no random numbers: the tables are then eval's)",
       false},
      {"structural", &O::structural, any_value(), "weights-as-given",
       "skip the structural pass (exactly-zero parameters redrawn and the future audited again):\n"
       "for trained weights that are zero on purpose (pruning)",
       false},
      {"screen", &O::screen, any_value(), "probe-every-row",
       "probe every trial of every table (default: the first trial's rows screen the future tables,\n"
       "and the past tables after a first one that moved nothing; the others run only where a screen moved)",
       false},
      {"routing_budget", &O::routing_budget, at_least(1), "routing-budget",
       "probe rows each routing search may run (a side in a mode), where a selection over time shows:\n"
       "a search it ends early leaves its horizon a lower bound, and a contract unproven"},
      {"device", &O::device, any_value(), "device",
       "cpu | cuda | cuda:N: where the model runs and is probed (its float64 decisions too; TF32 off)"},
      {"incremental", &O::incremental, any_value(), "incremental",
       "also audit the incremental path against forward: --model exports init_state(batch) and\n"
       "step(x, state) (audits/README.md: the incremental path); --mixer: the built-in KV cache / Grassmann buffer"},
      {"property_cases", &O::property_cases, at_least(1), "property",
       "property search: N RapidCheck cases (lengths, batch sizes, cuts, perturbation kinds, seeds),\n"
       "shrunk to the smallest length and cut that still fail"},
  };
  return fields;
}

std::string option_keyword(const std::string& flag) {
  std::string k = flag;
  std::replace(k.begin(), k.end(), '-', '_');
  return k;
}

void validate_audit_options(const AuditOptions& options) {
  for (const auto& f : audit_option_fields()) {
    FieldInfo named = f;  // the name a user typed: the flag, else the key
    named.key = f.flag.empty() ? f.key : "--" + f.flag;
    const std::string why = field_violation(named, f.ref(options));
    if (!why.empty()) throw InputError(why);
  }
}

AuditOptions audit_options_from_json(const nlohmann::json& settings, AuditOptions base) {
  AuditOptions o = fields_from_json(settings, audit_option_fields(), std::move(base), "audit");
  validate_audit_options(o);
  return o;
}

nlohmann::json audit_options_to_json(const AuditOptions& options) {
  return fields_to_json(options, audit_option_fields());
}

}  // namespace grassaudit
