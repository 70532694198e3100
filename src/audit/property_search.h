#pragma once
// `grassaudit audit --property N`: RapidCheck draws N cases -- a length, a batch size, a cut, a
// perturbation kind (resample, swap, constant, scaled), a mode and a seed -- and checks every
// property of the contract on each: no output before the cut (less the lookahead) moves when
// the inputs after it change; a prefix run alone gives the same outputs (length); a row does
// not move when the other rows change (batch); no output beyond the window moves when the
// inputs before the cut change (window). A failing case is shrunk by RapidCheck to the
// smallest length and cut that still fail; that minimal counterexample (L, cut, the offending
// positions, the effect) lands in the result and, like any broken property, in its violations.
// Decided in float64 where the target runs in it, else in its own dtype, against the threshold
// above the model's measured rounding floor (audit/precision_switch.h), as the main audit.
#include <cstdint>
#include <string>

#include "audit/audit_target.h"
#include "audit/audit_options.h"
#include "audit/audit_result.h"
#include "audit/property_runner.h"

namespace grassaudit {

// Runs after run_causality_audit on the same target (r: its result, updated in place: the
// counterexample, a violation of its kind if the audit had not found one, the verdict). A case
// the model cannot run (a drawn length or batch size, NaN outputs) ends the search with a note,
// not the audit. Throws InputError, before any probe, when no runner is set.
void run_property_search(AuditTarget& target, const AuditOptions& opt, int64_t cases, AuditResult& r);

// The RapidCheck runner the search draws its cases with (audit/property_runner.h): the CLI links
// it; the Python package hands over the one its grassaudit._property_runner module carries, or
// null with the reason property=N cannot run.
void set_property_search_runner(GaPropertySearch runner, const std::string& why_missing);
bool has_property_search();
// Throws InputError ("--property: no property search here (why)") when no runner is set.
void require_property_search();

}  // namespace grassaudit
