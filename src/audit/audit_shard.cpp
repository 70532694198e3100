#include "audit/audit_shard.h"

#include <ATen/ATen.h>

#include "audit/audit_prober.h"
#include "runtime/distributed.h"

namespace grassaudit {
namespace {
bool g_sharded = false;
bool sharded() { return g_sharded && dist::active(); }
}  // namespace

ShardedAuditScope::ShardedAuditScope() : saved_(g_sharded) { g_sharded = true; }
ShardedAuditScope::~ShardedAuditScope() { g_sharded = saved_; }

bool audit_owns_chunk(int64_t k) { return !sharded() || k % dist::world_size() == dist::rank(); }

void audit_reduce_table(EffectTable& table, Pass& pass, int64_t probes_before) {
  if (!sharded()) return;
  // effect: [L * L] float64, max over ranks (each cell was raised only by the chunks one rank ran)
  auto effects = at::from_blob(table.effect.data(), {static_cast<int64_t>(table.effect.size())}, at::kDouble);
  dist::allreduce_max(effects);
  auto maxima = at::tensor({pass.max_effect}, at::kDouble);
  dist::allreduce_max(maxima);
  pass.max_effect = maxima.item<double>();
  auto probes = at::tensor({static_cast<double>(pass.probes - probes_before)}, at::kDouble);
  dist::allreduce_sum(probes);
  pass.probes = probes_before + static_cast<int64_t>(probes.item<double>());
}

}  // namespace grassaudit
