#pragma once
// Internal to src/audit/checks: horizons through discrete routing. A selection over time (top-k
// routing, expert choice, a capacity queue, block selection, sorting into buckets) makes a
// dependence that is all or nothing: replacing x_s moves y_t only when it flips a selection y_t
// reads, and a random replacement of every input beyond a cut (the tables) flips the one that
// reaches farthest only now and then. Gradients do not see it at all. So where routing shows
// (routing_seen), the future and past checks search beyond the horizon their tables found:
// single positions replaced one at a time, several substitutions each, on fresh base sequences,
// farthest reach first, in batched passes, decided in the decisive precision against the horizon
// threshold. The plan is kSearchRounds rounds of kSearchBases bases x kSearchSubstitutions
// substitutions for every position that could still raise the horizon (fewer each round as it
// rises); what is left of --routing-budget (probe rows per side and mode) after it goes on in
// further rounds of fresh bases, as long as a position could still raise the horizon, the farthest
// reach first: a flip that reaches farthest is the rarest (one pair of positions shows it), and
// once the horizon is near the end few positions remain to share the rows. A search the budget
// ends before its plan is done leaves a lower bound (AuditResult::horizon_lower_bound).
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "audit/checks/check.h"
#include "audit/effect_table.h"

namespace grassaudit {

class InPrecision;

constexpr int64_t kSearchRounds = 4;
constexpr int64_t kSearchBases = 8;
constexpr int64_t kSearchSubstitutions = 4;

// Whether routing showed on `side` (the ops the watched forward ran, or a cell that switched
// between trials of that side's tables); records what showed in r.discrete_routing.
bool routing_seen(AuditRun& run, Side side);

// The search on `side` at (mode, L) beyond `known`: the cells it found (single-position effects,
// cut_distance the distance itself), judged by the caller against `threshold` after merging.
// Runs in the precision `in` holds; records itself in r.discrete_routing and marks the side's
// horizon a lower bound when the budget ends it.
EffectTable routing_search(AuditRun& run, const InPrecision& in, AuditMode mode, Side side, int64_t known,
                           double threshold);

// The search on `side` at the main length in each probed mode, in the deciding precision (float64
// where the target runs there): `found(mode, cells, in, threshold)` gets each mode's cells, found
// beyond known(mode) (asked just before that mode's search), and the horizon threshold they are
// judged against.
using RoutingFound = std::function<void(AuditMode, const EffectTable&, const InPrecision&, double threshold)>;
void search_probed_modes(AuditRun& run, Side side, const std::function<int64_t(AuditMode)>& known,
                         const RoutingFound& found);

// The JSON's discrete_routing (null when none was seen), the summary's lines, and the evidence of
// a kUnproven violation of the horizon named `what` ("leak horizon", "past horizon").
nlohmann::json routing_json(const AuditResult& r);
std::string routing_summary(const AuditResult& r);
Evidence unproven_evidence(const AuditResult& r, const std::string& what);

}  // namespace grassaudit
