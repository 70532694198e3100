#pragma once
// The causality audit: is any output y_t a function of an input x_s with s > t?
//
// Method 1, perturb and compare (every model): for each cut c (1 <= c < L) the inputs after c
// are replaced by fresh random draws and outputs at positions <= c are compared with the
// unperturbed ones. Rows for many cuts share one forward pass, compared with a base pass of the
// same shape (the base sequences tiled: position-wise arithmetic is bit-identical); train mode
// resets the RNG to the same state before every pass so dropout masks match row by row.
// Lengths: L, L-1, L/2, L/4, ..., 2. Trials: independent base sequences. Order: lengths outer,
// modes inner; every float32 table first and the float64 re-runs after them, or, for the gate
// (AuditOptions::stop_when_leaky), each table decided before the next so that it can stop once
// a table proves a leak.
//
// Rounding versus leak: effects are measured relative to the output scale (max |y|). A causal
// model built from masked/sliced arithmetic shows exactly 0. If float32 shows anything non-zero,
// the cuts that showed it (every (mode, length, cut) with a non-zero cell; the same probe rows)
// are re-run in float64, where rounding cross-talk falls to ~1e-16 while a real dependence keeps
// its size; cells above a stated multiple of the model's measured float64 rounding floor are
// leaks (audit/precision_switch.h; kLeakThreshold64, 1e-9, where no floor could be measured), so
// a dependence that decays is followed as far as rounding allows. Cuts with exact float32
// zeros are not re-run: a dependence of 1e-6 of the output scale is ~8 float32 ulps and cannot
// vanish. A model whose float32 effects vanish in float64 is causal with rounding_only = true.
//
// Method 2, gradients (targets that expose their input embeddings): d y_t / d e_s for s > t must
// be exactly zero (float32, when method 1 saw exact zeros) or below the same threshold. In float64
// the farthest exactly non-zero gradient is the structural horizon: where a path reaches.
//
// Beyond the time axis (one file each in audit/checks/), decided in float64 where the model runs
// there (a float32 screen first where one pass shape is compared with itself):
//   batch independence (eval and train mode): rows of a pass are replaced while others are kept;
//     a kept row that moves means rows mix (train-mode BatchNorm, a mean over the batch). The
//     horizons of a coupled mode are then measured one row per pass, so batch mixing is named
//     as such and never read as a future leak.
//   length independence (eval mode): y_t from the prefix x_0..x_{p-1} alone must equal y_t from
//     the full sequence for t <= p-1-max(K, leak horizon): what a position computes must not
//     depend on how many tokens follow (positions normalised by L, an FFT size chosen from L).
//   past horizon: the largest D with y_t depending on x_{t-D}, by replacing the inputs BEFORE
//     each cut (the mirror image of the future probe).
// A contract (lookahead K, window W) says what is allowed: y_t may read x_{t-W+1} .. x_{t+K}.
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "audit/audit_options.h"
#include "audit/audit_result.h"
#include "audit/audit_target.h"

namespace grassaudit {

// Throws InputError for targets that fail, return the wrong shape, or NaN/Inf outputs.
AuditResult run_causality_audit(AuditTarget& target, const AuditOptions& options);

// The whole-model checks the options ask for (options.property_cases, options.incremental), after
// the audit r of the target's outputs, each adding to r (`output`: the leaf --output named).
void run_model_checks(AuditTarget& target, const AuditOptions& options, const std::optional<std::string>& output,
                      AuditResult& r);

nlohmann::json to_json(const AuditResult& r);
nlohmann::json to_json(const PropertyCounterexample& c);
// The summary of an audited output leaf (path and shape as given).
OutputResult output_result(const AuditResult& r, const std::string& path, const std::vector<int64_t>& shape);
// The leak map as CSV: t,D,effect (rows with effect > 0 only).
std::string leak_map_csv(const AuditResult& r);
// Human summary, a few lines.
std::string summarize(const AuditResult& r);

}  // namespace grassaudit
