#pragma once
// The cache-consistency audit (audit --incremental, and the training gate for built-in models):
// does the incremental path (init_state + step, a KV cache, a recurrent state, a streaming
// buffer) compute the model that forward() computes?
//
// Consistency: for several partitions of L into consecutive chunks (one position at a time; a
// prefill of L/2 then single steps; a prefill of L/4 then chunks of 3; random chunk sizes 1..7),
// each run from a fresh init_state on the module as loaded (state a step leaves in the module is
// put back between runs), the concatenated step outputs must equal forward(x) at every position,
// with batch rows that differ. Isolation: on one module, a second run from a fresh init_state
// must give the first run's outputs, and forward after the steps forward's outputs before them:
// a cache kept in the module instead of the passed state is caught.
//
// Precision: steps and forward run different shapes, which round differently in float32 (other
// GEMM shapes, another thread split), so whether a float32 comparison of them is bit for bit
// exact says nothing about the model and differs between CPUs and thread counts. A float32 model
// is compared in float64 directly, against the threshold above its measured rounding floor
// (audit/precision_switch.h); in its own dtype against its float32 floor only where float64 is
// unavailable. A float64 model: its own run decides (exact zeros stand).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "audit/audit_target.h"
#include "audit/audit_options.h"
#include "audit/audit_result.h"

namespace grassaudit {

struct IncrementalOptions {
  int64_t seq_len = 32;
  int64_t batch = 2;          // rows that differ
  uint64_t seed = 1234;
  int64_t random_partitions = 2;
  // The gate's setting: two partitions (a prefill then single steps; one random) and isolation.
  bool cheap = false;
};

struct Partition {
  std::string name;
  std::vector<int64_t> sizes;
};

struct IncrementalResult {
  bool consistent = true;
  std::vector<Partition> partitions;    // tried, in order
  // The first inconsistent position (smallest t over the partitions) and its partition.
  std::optional<int64_t> first_position;
  std::string first_partition;
  double first_effect = 0;
  double max_effect = 0;                // largest relative difference, decisive precision
  std::optional<double> max_effect_own;  // in the target's own dtype (nullopt: not run, float64 decided)
  std::string precision;                // what decided: float64, or the own dtype (a float64 target; no float64)
  double threshold = 0;
  bool isolation = true;
  double fresh_state_effect = 0;        // a second run from a fresh init_state vs the first
  double forward_after_steps_effect = 0;  // forward after the steps vs before
  std::optional<PrecisionFloor> precision_floor;
  std::vector<std::string> notes;
  double seconds = 0;
  Evidence evidence;                    // the inconsistency or isolation failure, one line
  bool holds() const { return consistent && isolation; }
};

// The partitions of L the audit tries (see the top); `cheap`: the gate's two.
std::vector<Partition> incremental_partitions(int64_t L, uint64_t seed, int64_t random_partitions, bool cheap);

// InputError (exit 2) when the target has no incremental path (its one line).
IncrementalResult run_incremental_audit(AuditTarget& target, const IncrementalOptions& options);

// Adds the result to an audit: JSON key `incremental`, violation kind `incremental` (verdict
// leaky) when it does not hold, and a note.
void attach_incremental(const IncrementalResult& inc, AuditResult& r);

nlohmann::json to_json(const IncrementalResult& inc);

}  // namespace grassaudit
