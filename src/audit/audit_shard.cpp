#include "audit/audit_shard.h"

#include <ATen/ATen.h>

#include "audit/audit_prober.h"
#include "runtime/distributed.h"

namespace grassaudit {
namespace {
bool g_sharded = false;
bool sharded() { return g_sharded && dist::active(); }
}  // namespace

ShardedAuditScope::ShardedAuditScope() : sharded_(g_sharded, true) {}

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

void audit_reduce_flags(std::vector<uint8_t>& flags) {
  if (!sharded() || flags.empty()) return;
  // Each bit its own max-reduced column: a max over ranks of 0/1 is their or.
  const auto n = static_cast<int64_t>(flags.size());
  auto bits = at::empty({n, 8}, at::kDouble);
  auto acc = bits.accessor<double, 2>();
  for (int64_t i = 0; i < n; ++i)
    for (int b = 0; b < 8; ++b) acc[i][b] = (flags[static_cast<size_t>(i)] >> b) & 1;
  dist::allreduce_max(bits);
  for (int64_t i = 0; i < n; ++i) {
    uint8_t f = 0;
    for (int b = 0; b < 8; ++b) f |= static_cast<uint8_t>(acc[i][b] > 0 ? 1 << b : 0);
    flags[static_cast<size_t>(i)] = f;
  }
}

}  // namespace grassaudit
