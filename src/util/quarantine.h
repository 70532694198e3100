#pragma once
// The quarantine rule every run artifact obeys: a perplexity measured on weights the audit found
// leaky is not a perplexity, so it may appear only under a key prefixed "quarantined_"; a causal
// run's perplexities appear only under plain keys. The trainers write by it (put_ppl,
// train/gate.h); the readers of summary.json, metrics.jsonl and audit.json enforce it here.
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace grassaudit {

// The audit verdict `v` read from `where`: "causal" or "leaky". InputError "<where>: audit block
// has no 'verdict'" when absent, "<where>: audit verdict must be ..." for any other value.
std::string check_verdict(const std::optional<std::string>& v, const std::string& where);

// Every key of `value`, recursively: under verdict "leaky" a perplexity key (ending in "ppl" or
// holding "perplexity") without the "quarantined_" prefix is a malformed artifact; under
// "causal" a quarantined one is. Any other verdict (none: an unaudited run) allows both.
void check_ppl_keys(const nlohmann::json& value, const std::string& verdict, const std::string& where);

}  // namespace grassaudit
