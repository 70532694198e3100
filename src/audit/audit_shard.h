#pragma once
// The causality audit divided over data-parallel ranks. Inside
// a ShardedAuditScope, in a joined c10d group (runtime/distributed.h), each (mode, length) probe
// table's chunks of probe rows are divided over the ranks (chunk k to rank k % world) and the
// tables are reduced by max. A chunk's result does not depend on which rank computes it (same
// rows, same shape, the RNG reset to the same seed before every train-mode pass), so every rank
// ends with exactly the one-process tables, verdict and horizon. Outside a scope, or in one
// process, nothing changes: a caller that audits on one rank only must not open a scope.
// Callers (the training gate, grassaudit audit) open the scope; the prober (audit_prober.cpp)
// calls the two functions below.
#include <cstdint>
#include <vector>

#include "util/scoped_value.h"

namespace grassaudit {

struct EffectTable;  // audit/effect_table.h
struct Pass;         // audit/audit_prober.h (internal to src/audit)

class ShardedAuditScope {
 public:
  ShardedAuditScope();

 private:
  ScopedValue<bool> sharded_;
};

// Whether this rank probes chunk k of the current table (always, when not sharded).
bool audit_owns_chunk(int64_t k);

// After a table's chunks: the max of the effects and of pass.max_effect over the ranks, and the
// sum of the probe rows each rank added since `probes_before`.
void audit_reduce_table(EffectTable& table, Pass& pass, int64_t probes_before);

// Per-cell bit flags seen by this rank's chunks, or-ed over the ranks (nothing when not sharded).
void audit_reduce_flags(std::vector<uint8_t>& flags);

}  // namespace grassaudit
