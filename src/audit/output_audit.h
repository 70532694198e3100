#pragma once
// The audit of a model file's outputs leaf by leaf (audit/model_signature.h): every
// floating-point leaf with the time axis gets its own run_causality_audit (effects are relative
// to each leaf's own scale, so a small leaf's leak is never hidden by a large one), the others are
// listed as skipped. The result's top-level fields are those of the worst leaf (leaky first, then
// the largest horizon, then the largest effect); `outputs` lists every leaf.
#include <optional>
#include <string>
#include <vector>

#include "audit/causality_audit.h"
#include "audit/model_file_target.h"

namespace grassaudit {

// The options an audit of this file runs with, inside the sequence lengths it declares
// (ModelFileTarget::seq_len_range): a static length alone, without the length check; a range
// keeps the schedule's lengths inside it and raises min_seq_len to its lower end; either says
// why in lengths_why. A --seq-len or --seq-lens entry outside is an InputError naming the range.
AuditOptions file_audit_options(ModelFileTarget& target, const AuditOptions& given);

// only: --output PATH, audit that leaf alone (InputError when it names no leaf or a skipped
// one). The target is left selecting the worst leaf (for the property search).
AuditResult run_output_audits(ModelFileTarget& target, const AuditOptions& options,
                              const std::optional<std::string>& only = std::nullopt);

}  // namespace grassaudit
