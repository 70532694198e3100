#pragma once
// Internal to src/audit: the probes behind run_causality_audit (perturb and compare, the
// non-vacuity check, the gradient map) and the effect tables they fill. See causality_audit.h
// for the method; nothing outside src/audit includes this.
#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "audit/audit_target.h"
#include "audit/causality_audit.h"

namespace grassaudit {

// effect[t * L + c]: relative change of y_t when inputs from position c on (0-based; c > t)
// are replaced. One table per (mode, length) of a pass.
struct EffectTable {
  int64_t L = 0;
  std::vector<double> effect;
  double at(int64_t t, int64_t c) const { return effect[static_cast<size_t>(t * L + c)]; }
  double max() const { return effect.empty() ? 0.0 : *std::max_element(effect.begin(), effect.end()); }
  void raise(int64_t t, int64_t c, double v) {
    auto& e = effect[static_cast<size_t>(t * L + c)];
    e = std::max(e, v);
  }
};

// The tables of one precision, with its probe count and largest effect.
struct Pass {
  at::ScalarType dtype = at::ScalarType::Undefined;
  std::map<std::pair<AuditMode, int64_t>, EffectTable> tables;  // (mode, L)
  double max_effect = 0;
  int64_t probes = 0;
};

class Prober {
 public:
  Prober(AuditTarget& target, const AuditOptions& opt);

  // One (mode, length) table in the target's current dtype, every cut.
  EffectTable probe_table(AuditMode mode, int64_t L, Pass& pass);

  // The decisive re-run (in the target's current dtype) of only the cuts where `first` saw a
  // non-zero effect. A cut that moved nothing at all in float32 has nothing to tell apart:
  // its zeros stand (zero effect cells stay zero in the returned table).
  EffectTable rerun_nonzero(AuditMode mode, const EffectTable& first, Pass& pass);

  // Non-vacuity: replace the first half, keep the rest; how much do later outputs move?
  double past_effect(int64_t L);

  // Method 2: row i differentiates <w, y_{t_i}> w.r.t. every input embedding; entries s > t_i
  // must vanish. Returns G[t][s] = ||d<w, y_t>/d e_s||.
  std::vector<std::vector<double>> gradient_map(int64_t L);

 private:
  // rows x L (x C) random inputs from the audit's own generator (not the global one).
  at::Tensor random_inputs(int64_t rows, int64_t L, at::Generator& gen);
  // Runs the target and checks the output contract: [rows, L, ...] and finite.
  at::Tensor run(const at::Tensor& x);
  // One mode at one length, all trials (the row layout is explained at the definition).
  void probe(AuditMode mode, int64_t L, EffectTable& table, Pass& pass, std::vector<int64_t> cuts = {});

  AuditTarget& target_;
  const AuditOptions& opt_;
  InputSpec in_;
};

}  // namespace grassaudit
