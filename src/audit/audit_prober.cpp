#include "audit/audit_prober.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>  // at::NoGradGuard: no longer reached through ATen.h in LibTorch 2.x
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/csrc/autograd/autograd.h>

#include <algorithm>
#include <stdexcept>

#include "audit/audit_shard.h"
#include "audit/direction_draws.h"
#include "audit/precision_switch.h"
#include "util/error.h"
#include "util/error_text.h"
#include "util/non_copyable.h"

namespace grassaudit {

namespace {
// splitmix64's finaliser: every input bit reaches every output bit.
uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}
}  // namespace

uint64_t probe_seed(uint64_t audit_seed, const char* name, int64_t L, int64_t variant) {
  uint64_t h = 0xCBF29CE484222325ULL;  // FNV-1a of the name
  for (const char* c = name; *c; ++c) h = (h ^ static_cast<unsigned char>(*c)) * 0x100000001B3ULL;
  return mix(mix(mix(audit_seed ^ h) ^ static_cast<uint64_t>(L)) ^ static_cast<uint64_t>(variant));
}

at::Tensor replacement_inputs(const InputSpec& in, const at::Tensor& base, const at::Tensor& fresh) {
  if (in.kind != InputSpec::Kind::kTokens) return fresh;
  if (in.vocab_slots.empty()) {
    if (in.size < 2) return fresh;
    return base.add(fresh.remainder(in.size - 1).add(1)).remainder(in.size);
  }
  // Several tokens slots [.., n]: each shifted within its own vocabulary (a slot of one token
  // cannot change and keeps its base).
  const auto V = in.vocab_tensor();
  const auto shifted = base.add(fresh.remainder((V - 1).clamp_min(1)).add(1)).remainder(V);
  return at::where(V.gt(1), shifted, base);
}

at::Tensor as_pair(const at::Tensor& x) {
  std::vector<int64_t> reps(static_cast<size_t>(x.dim()), 1);
  reps[0] = 2;
  return x.repeat(reps).contiguous();
}

namespace {
// y [rows, L, K] -> [rows]: each row's scale, max |y| (float64, never 0), which effects are relative to.
at::Tensor row_scales(const at::Tensor& y) { return y.abs().amax({1, 2}).to(at::kDouble).clamp_min(1e-300); }

// batch [n, ...] -> [chunk, ...]: padded with repeats of its last row, so that every pass of a
// table has the chunk's shape (rows at other batch positions can round otherwise).
at::Tensor padded_to(const at::Tensor& batch, int64_t chunk) {
  const int64_t n = batch.size(0);
  if (n >= chunk) return batch;
  std::vector<int64_t> reps(static_cast<size_t>(batch.dim()), 1);
  reps[0] = chunk - n;
  return at::cat({batch, batch.narrow(0, n - 1, 1).repeat(reps)}, 0);
}
}  // namespace

double output_scale(const at::Tensor& y) { return std::max(y.abs().max().item<double>(), 1e-300); }

Prober::Prober(AuditTarget& target, const AuditOptions& opt) : target_(target), opt_(opt), in_(target.input()) {}

at::Tensor Prober::random_inputs(const InPrecision& in, int64_t rows, int64_t L, at::Generator& gen) {
  return grassaudit::random_inputs(in_, in.dtype(), rows, L, gen);
}

double Pass::max_cell() const {
  double m = 0;
  for (const auto& [key, table] : tables) m = std::max(m, table.max());
  return m;
}

at::ScalarType Pass::dtype() const {
  at::ScalarType out = at::ScalarType::Undefined;
  for (const auto& [key, table] : tables) {
    if (table.dtype == at::kDouble) return at::kDouble;
    if (out == at::ScalarType::Undefined) out = table.dtype;
  }
  return out;
}

void Prober::require(const InPrecision& in) const {
  if (target_.dtype() != in.dtype())
    throw std::logic_error(fmt::format("probe in {} while the target is in {}", dtype_name(in.dtype()),
                                       dtype_name(target_.dtype())));
}

at::Tensor random_inputs(const InputSpec& in, at::ScalarType dtype, int64_t rows, int64_t L, at::Generator& gen) {
  if (in.kind == InputSpec::Kind::kTokens && !in.vocab_slots.empty()) {
    std::vector<at::Tensor> slots;
    for (int64_t v : in.vocab_slots) slots.push_back(at::randint(0, v, {rows, L, 1}, gen, at::TensorOptions().dtype(at::kLong)));
    return at::cat(slots, 2);  // [rows, L, n]
  }
  if (in.kind == InputSpec::Kind::kTokens)
    return at::randint(0, in.size, {rows, L}, gen, at::TensorOptions().dtype(at::kLong));
  return at::randn({rows, L, in.size}, gen, at::TensorOptions().dtype(dtype)) * in.feature_scale;
}

// x: [rows, L(, C)] -> y: [rows, L, K], detached; InputError on a broken contract.
at::Tensor Prober::run(const at::Tensor& x, bool check_finite_outputs) {
  record_forward(target_.dtype(), x.size(0), x.size(1));
  const int64_t rows = x.size(0), L = x.size(1);
  at::Tensor y;
  try {
    if (watch_len_ && *watch_len_ == L) {
      OpWatch watch(L);
      y = target_.forward(x);
      watched_ = watch.ops();
      watch_len_.reset();
    } else {
      y = target_.forward(x);
    }
  } catch (const ForwardFailure&) {
    throw;
  } catch (const InputError& e) {
    throw ForwardFailure(e.what(), L, first_line(e.what()));
  }
  if (y.dim() < 2 || y.size(0) != rows || y.size(1) != L)
    throw InputError(fmt::format("{}: output shape [{}] does not start with [B, L] = [{}, {}]", target_.describe(),
                                 fmt::join(y.sizes().vec(), ", "), rows, L));
  if (!at::isFloatingType(y.scalar_type()))
    throw InputError(fmt::format("{}: output dtype {} is not floating point", target_.describe(),
                                 c10::toString(y.scalar_type())));
  y = y.detach().reshape({rows, L, -1});
  if (check_finite_outputs) check_finite(y);
  return y;
}

void Prober::check_finite(const at::Tensor& y) {
  if (!at::isfinite(y).all().item<bool>())
    throw NonFiniteOutput(fmt::format("{}: model returned NaN or Inf outputs", target_.describe()), y.size(1));
}

// y, y_ref [rows, L, K] -> [rows, L]: the same values as (y - y_ref).abs().amax(-1).
at::Tensor Prober::max_abs_diff(const at::Tensor& y, const at::Tensor& y_ref) {
  if (!diff_buffer_.defined() || diff_buffer_.sizes() != y.sizes() || diff_buffer_.scalar_type() != y.scalar_type())
    diff_buffer_ = at::empty(y.sizes(), y.options());
  at::sub_out(diff_buffer_, y, y_ref);
  auto m = diff_buffer_.abs_().amax(-1);
  if (!at::isfinite(m).all().item<bool>()) check_finite(y);  // NaN/Inf in y: the contract's error
  return m;
}

// Row r [R, L(, C)]: base row_base[r] with the positions replace[r] marks taken from fresh[r]
// (replacement_inputs: a different token, or the fresh draw); the columns are the caller's.
Prober::ProbeRows Prober::replaced_rows(const InPrecision& in, AuditMode mode, int64_t L, Side side,
                                        const at::Tensor& bases, const at::Tensor& row_base, const at::Tensor& fresh,
                                        at::Tensor replace) {
  auto base_rows = bases.index_select(0, row_base);  // [R, L(, C)]
  if (bases.dim() == 3) replace = replace.unsqueeze(-1);
  ProbeRows out;
  out.mode = mode;
  out.L = L;
  out.side = side;
  out.dtype = in.dtype();
  out.bases = bases;
  out.rows = at::where(replace, replacement_inputs(in_, base_rows, fresh), base_rows);
  return out;
}

// The rows of one cut table, ordered (cut, trial): row r tests cut c = cuts[r / T] of trial
// r % T, with the inputs of `side` at c replaced. The same rows in both modes and in the float64
// re-run (the past side draws its own); a subset of cuts is exactly the rows the whole table
// would probe at those cuts (same seed, same fresh draws), which is how the float64 re-run
// repeats only the cuts that moved in float32. first_trial_only (the screen): trial 0's rows of
// the same draws, T = 1.
Prober::ProbeRows Prober::cut_rows(const InPrecision& in, AuditMode mode, int64_t L, std::vector<int64_t> cuts,
                                   Side side, bool first_trial_only) {
  const bool train = mode == AuditMode::kTrain;
  auto gen = at::make_generator<at::CPUGeneratorImpl>(probe_seed(opt_.seed, side == Side::kPast ? "past" : "future", L));
  if (cuts.empty())
    for (int64_t c = 1; c < L; ++c) cuts.push_back(c);
  const int64_t T_all = opt_.trials, R_all = T_all * (L - 1);
  const int64_t T = first_trial_only ? 1 : T_all, R = T * static_cast<int64_t>(cuts.size());
  auto bases = random_inputs(in, T_all, L, gen).narrow(0, 0, T);             // [T, L(, C)]
  auto fresh_all = random_inputs(in, R_all, L, gen);                          // [T_all * (L-1), L(, C)]
  auto cut_of = at::tensor(cuts, at::kLong);                                  // [R / T]
  auto row_trial = at::arange(R, at::kLong).remainder(T);                     // [R]
  auto row_cut = cut_of.index_select(0, at::arange(R, at::kLong).div(T, "floor"));      // [R]
  auto fresh = fresh_all.index_select(0, row_cut.sub(1).mul(T_all).add(row_trial));    // [R, L(, C)]
  auto pos = at::arange(L, at::kLong).view({1, L});
  auto replace = side == Side::kFuture ? pos.ge(row_cut.view({R, 1})) : pos.lt(row_cut.view({R, 1}));  // [R, L]
  ProbeRows out = replaced_rows(in, mode, L, side, bases, row_trial, fresh, replace);
  out.columns = std::move(cuts);
  out.per_column = T;
  out.dropout_seed = probe_seed(opt_.seed, side == Side::kPast ? "past/dropout" : "future/dropout", L, train);
  return out;
}

// The rows of a single-position table, ordered (position, substitution, base): row r replaces
// position positions[r / (B * K)] of base r % B. Its column is the cut whose compared outputs are
// the ones that position can move: s on the future side (t < s), s + 1 on the past side (t > s).
Prober::ProbeRows Prober::position_rows(const InPrecision& in, AuditMode mode, int64_t L,
                                        const std::vector<int64_t>& positions, int64_t B, int64_t K, int64_t round,
                                        Side side) {
  const bool train = mode == AuditMode::kTrain;
  auto gen = at::make_generator<at::CPUGeneratorImpl>(
      probe_seed(opt_.seed, side == Side::kPast ? "past/routing" : "future/routing", L, round));
  const int64_t R = static_cast<int64_t>(positions.size()) * K * B;
  auto bases = random_inputs(in, B, L, gen);                                     // [B, L(, C)]
  auto fresh = random_inputs(in, R, L, gen);                                     // [R, L(, C)]
  auto row_base = at::arange(R, at::kLong).remainder(B);                         // [R]
  auto row_pos = at::tensor(positions, at::kLong).index_select(0, at::arange(R, at::kLong).div(B * K, "floor"));
  auto replace = at::arange(L, at::kLong).view({1, L}).eq(row_pos.view({R, 1}));  // [R, L]
  ProbeRows out = replaced_rows(in, mode, L, side, bases, row_base, fresh, replace);
  for (int64_t s : positions) out.columns.push_back(side == Side::kFuture ? s : s + 1);
  out.per_column = B * K;
  out.dropout_seed = probe_seed(opt_.seed, "routing/dropout", L, train);
  return out;
}

// The passes of one table's rows; row r is compared with base r % T (T = the bases). Chunks hold
// a multiple of T rows (the last one padded with repeats), so row i of EVERY chunk belongs to
// base i % T and one base pass -- the bases tiled to the chunk's shape -- serves all chunks.
// Same shape, same rows: unaffected positions go through bit-identical arithmetic (rows at
// different batch positions can round differently in GEMM kernels: measured 2.6e-7 on a causal
// model). Train mode resets the RNG to the same state before every pass, so row i sees the same
// dropout mask in the base and in each probe pass. A mode whose rows mix (IsolatedRows) runs
// every row alone against its base run alone instead.
void Prober::run_passes(const ProbeRows& pr, EffectTable& table, Pass& pass, const PassPlan& plan) {
  if (target_.dtype() != pr.dtype) throw std::logic_error("probe rows drawn in one precision run in another");
  at::NoGradGuard no_grad;
  const bool train = pr.mode == AuditMode::kTrain;
  target_.set_train(train);
  const int64_t L = pr.L, T = pr.bases.size(0), R = pr.rows.size(0);
  const Side side = pr.side;
  const auto column = [&](int64_t r) { return pr.columns[static_cast<size_t>(r / pr.per_column)]; };
  TableParts* parts = plan.parts;
  const TableDone* done = plan.done && *plan.done ? plan.done : nullptr;

  // Per cell, whether some trial saw exactly zero (1) and some kDiscreteJump or more (2).
  std::vector<uint8_t> seen(plan.trial_flags && T > 1 ? static_cast<size_t>(L * L) : 0, 0);
  // diff [n, L]: relative move of each output position of rows start .. start+n-1.
  auto record = [&](const at::Tensor& diff, int64_t start, int64_t n) {
    const at::Tensor host = diff.cpu();  // [n, L] read back from the target's device
    auto acc = host.accessor<double, 2>();
    for (int64_t i = 0; i < n; ++i) {
      const int64_t c = column(start + i);
      const int64_t lo = side == Side::kFuture ? 0 : c, hi = side == Side::kFuture ? c : L;
      for (int64_t t = lo; t < hi; ++t) {
        const double v = acc[i][t];
        table.raise(t, c, v);
        pass.max_effect = std::max(pass.max_effect, v);
        if (!seen.empty()) seen[static_cast<size_t>(t * L + c)] |= v == 0.0 ? 1 : v >= kDiscreteJump ? 2 : 0;
      }
    }
    pass.probes += n;
  };
  // The first cell that switched between trials, once the table is in (every rank's rows).
  const auto note_mixed = [&] {
    if (!plan.trial_flags) return;
    audit_reduce_flags(seen);
    auto& mixed = side == Side::kFuture ? mixed_future_ : mixed_past_;
    for (size_t k = 0; k < seen.size() && !mixed; ++k)
      if (seen[k] == 3) {
        const auto t = static_cast<int64_t>(k) / L, c = static_cast<int64_t>(k) % L;
        mixed = MixedCell{pr.mode, L, t, c};
      }
  };
  const auto seeded_run = [&](const at::Tensor& x, bool check_finite_outputs) {
    if (train) at::manual_seed(pr.dropout_seed);
    return run(x.contiguous(), check_finite_outputs);
  };
  const auto seeded_alone = [&](const at::Tensor& x) {
    if (train) at::manual_seed(pr.dropout_seed);
    return run_alone(x);
  };
  // The base pass and its rows' scales (y [rows, L, K] -> [rows]), run once per table: a table
  // probed in parts keeps them in `parts`.
  const auto base_pass = [&](const std::function<at::Tensor()>& run_base) {
    if (parts && parts->y_base.defined()) return std::make_pair(parts->y_base, parts->scale);
    at::Tensor y = run_base();
    at::Tensor sc = row_scales(y);
    if (parts) parts->y_base = y, parts->scale = sc;
    return std::make_pair(y, sc);
  };
  const int64_t probes_before = pass.probes;

  // Chunks: one row alone in a mode whose rows mix (as two identical rows: see run_alone), else a
  // multiple of T rows; the screen reads only whether a row moved, so its passes hold no more rows
  // than it has. The base: the bases tiled to the chunk's shape, or each base alone.
  const bool alone = isolated(pr.mode);
  const int64_t chunk = alone        ? 1
                        : plan.screen ? std::min(std::max<int64_t>(1, opt_.batch), R)
                                      : std::max<int64_t>(1, opt_.batch / T) * T;
  const auto [y_base, scale] = base_pass([&] {  // [chunk, L, K] (alone: [T, L, K]), [chunk] ([T])
    if (!alone) return seeded_run(pr.bases.index_select(0, at::arange(chunk, at::kLong).remainder(T)), true);
    std::vector<at::Tensor> ys;
    for (int64_t b = 0; b < T; ++b) ys.push_back(seeded_alone(pr.bases.narrow(0, b, 1)));
    return at::cat(ys, 0);
  });
  for (int64_t start = 0; start < R; start += chunk) {
    const int64_t first_cut = column(start);
    if (parts && first_cut < parts->next_cut) continue;  // an earlier part probed it
    // Asked where a column starts. Data-parallel, each rank asks with its own part of the table:
    // a part can only end a table later than the whole would, never earlier.
    if (done && start % pr.per_column == 0 && (*done)(table, first_cut)) break;
    if (parts) parts->next_cut = start + chunk < R ? column(start + chunk) : L;
    if (plan.sharded && !audit_owns_chunk(start / chunk)) continue;  // another rank's chunk (audit_shard.h)
    const int64_t n = std::min(chunk, R - start);
    // diff[i, t]: max over features of |y - y_base| at position t of probe row i, relative.
    if (alone) {
      const auto y = seeded_alone(pr.rows.narrow(0, start, 1));
      const int64_t b = start % T;
      record(max_abs_diff(y, y_base.narrow(0, b, 1)).to(at::kDouble).div(scale.narrow(0, b, 1).view({1, 1})).contiguous(),
             start, 1);
    } else {
      const auto y = seeded_run(padded_to(pr.rows.narrow(0, start, n), chunk), false);  // finiteness: max_abs_diff
      record(max_abs_diff(y, y_base).to(at::kDouble).div(scale.view({chunk, 1})).contiguous(), start, n);
    }
  }
  if (plan.sharded) audit_reduce_table(table, pass, probes_before);
  note_mixed();
}

EffectTable Prober::single_position_table(const InPrecision& in, AuditMode mode, int64_t L,
                                          const std::vector<int64_t>& positions, int64_t B, int64_t K, int64_t round,
                                          Side side) {
  require(in);
  EffectTable table = EffectTable::zeros(L, in.dtype());
  if (positions.empty()) return table;
  Pass scratch;  // the search counts its own rows
  PassPlan plan;
  plan.trial_flags = false;  // its bases are not trials of one table
  plan.sharded = false;      // every rank searches alike
  run_passes(position_rows(in, mode, L, positions, B, K, round, side), table, scratch, plan);
  return table;
}

// x [1, L(, C)] -> y [1, L, K], one sequence on its own (as_pair).
at::Tensor Prober::run_alone(const at::Tensor& x) { return run(as_pair(x)).narrow(0, 0, 1); }

EffectTable Prober::probe_table(const InPrecision& in, AuditMode mode, int64_t L, Pass& pass, Side side) {
  return rerun_cuts(in, mode, L, {}, pass, side);
}

EffectTable Prober::rerun_cuts(const InPrecision& in, AuditMode mode, int64_t L, const std::vector<int64_t>& cuts,
                               Pass& pass, Side side, const TableDone& done, TableParts* parts) {
  require(in);
  EffectTable table = parts && parts->table.L == L ? parts->table : EffectTable::zeros(L, in.dtype());
  PassPlan plan;
  plan.done = &done;
  plan.parts = parts;
  run_passes(cut_rows(in, mode, L, cuts, side, /*first_trial_only=*/false), table, pass, plan);
  if (parts) parts->table = table;
  return table;
}

EffectTable Prober::screen_table(const InPrecision& in, AuditMode mode, int64_t L, Pass& pass, Side side,
                                 int64_t from_cut) {
  require(in);
  EffectTable table = EffectTable::zeros(L, in.dtype());
  std::vector<int64_t> cuts;
  for (int64_t c = std::max<int64_t>(1, from_cut); c < L; ++c) cuts.push_back(c);
  if (cuts.empty()) return table;
  PassPlan plan;
  plan.screen = true;
  run_passes(cut_rows(in, mode, L, cuts, side, /*first_trial_only=*/true), table, pass, plan);
  return table;
}

EffectTable Prober::rerun_nonzero(const InPrecision& in, AuditMode mode, const EffectTable& first, Pass& pass,
                                  Side side) {
  std::vector<int64_t> cuts;
  for (int64_t c = 1; c < first.L; ++c)
    for (int64_t t = 0; t < first.L; ++t)
      if (first.at(t, c) > 0) {
        cuts.push_back(c);
        break;
      }
  if (cuts.empty()) return EffectTable::zeros(first.L, in.dtype());
  return rerun_cuts(in, mode, first.L, cuts, pass, side);
}

// Trials of [B, L(, C)] passes, B = max(2, batch): the base pass, then the same pass with the
// odd rows replaced by fresh draws. Even rows are the same inputs at the same batch positions,
// so a batch-independent model gives them bit-identical outputs (same shape, same arithmetic).
BatchEffect Prober::batch_effect(const InPrecision& in, AuditMode mode, int64_t L, bool screen) {
  require(in);
  at::NoGradGuard no_grad;
  const bool train = mode == AuditMode::kTrain;
  target_.set_train(train);
  auto gen = at::make_generator<at::CPUGeneratorImpl>(probe_seed(opt_.seed, "batch", L));
  const int64_t B = std::max<int64_t>(2, opt_.batch);
  const uint64_t seed = probe_seed(opt_.seed, "batch/dropout", L, train);
  auto keep = at::arange(B, at::kLong).remainder(2).eq(0);  // [B]
  BatchEffect out;
  out.by_position.assign(static_cast<size_t>(L), 0.0);
  for (int64_t trial = 0; trial < opt_.trials; ++trial) {
    auto base = random_inputs(in, B, L, gen);
    auto fresh = random_inputs(in, B, L, gen);
    auto k = base.dim() == 3 ? keep.view({B, 1, 1}) : keep.view({B, 1});
    if (train) at::manual_seed(seed);
    auto y0 = run(base);
    if (train) at::manual_seed(seed);
    auto y1 = run(at::where(k, base, fresh).contiguous(), /*check_finite=*/false);  // max_abs_diff checks
    auto scale = row_scales(y0);                   // [B]
    auto diff = max_abs_diff(y1, y0).to(at::kDouble).div(scale.view({B, 1})).cpu().contiguous();  // [B, L]
    auto acc = diff.accessor<double, 2>();
    for (int64_t b = 0; b < B; b += 2)
      for (int64_t t = 0; t < L; ++t) {
        double& at_t = out.by_position[static_cast<size_t>(t)];
        at_t = std::max(at_t, acc[b][t]);
        if (acc[b][t] > out.effect) out.effect = acc[b][t], out.row = b, out.position = t;
      }
    // The screen: kept rows bit for bit unmoved in the first trial stand for the check (the
    // trials after it run only when it moved, as they would without the screen).
    if (screen && out.effect == 0.0) break;
  }
  return out;
}

// Eval mode, one sequence per pass (rows that mix cannot blur the comparison): per trial the
// full run [1, L] and each prefix run [1, p]; positions t < p - guard must agree. A length the
// model cannot run at is recorded (error) and skipped: the check says so rather than failing.
std::vector<PrefixEffect> Prober::prefix_effects(const InPrecision& in, int64_t L, const std::vector<int64_t>& prefix_lens,
                                                 int64_t guard) {
  require(in);
  at::NoGradGuard no_grad;
  target_.set_train(false);
  auto gen = at::make_generator<at::CPUGeneratorImpl>(probe_seed(opt_.seed, "length", L));
  std::vector<PrefixEffect> out;
  for (int64_t p : prefix_lens) out.push_back(PrefixEffect{p, 0.0, -1, {}});
  for (int64_t trial = 0; trial < opt_.trials; ++trial) {
    auto x = random_inputs(in, 1, L, gen);
    auto y_full = run_alone(x);                                                 // [1, L, K]
    const double scale = output_scale(y_full);
    for (auto& pe : out) {
      const int64_t n = pe.prefix_len - guard;  // compared positions 0 .. n-1
      if (n <= 0 || !pe.error.empty()) continue;
      at::Tensor y_p;
      try {
        y_p = run_alone(x.narrow(1, 0, pe.prefix_len));                        // [1, p, K]
      } catch (const NonFiniteOutput& e) {
        // NaN at this length on any input: the model does not run there. NaN on some inputs
        // only broke the output contract.
        if (try_forward(in, pe.prefix_len).empty()) throw;
        pe.error = e.reason();
        continue;
      } catch (const InputError& e) {
        pe.error = e.what();
        continue;
      }
      auto d = (y_p.narrow(1, 0, n) - y_full.narrow(1, 0, n)).abs().amax(-1).to(at::kDouble).div(scale)[0].cpu().contiguous();  // [n]
      auto acc = d.accessor<double, 1>();
      for (int64_t t = 0; t < n; ++t)
        if (acc[t] > pe.effect) {
          pe.effect = acc[t];
          pe.position = t;
        }
    }
  }
  return out;
}

Prober::Repeat Prober::repeat_effect(const InPrecision& in, AuditMode mode, int64_t L) {
  require(in);
  at::NoGradGuard no_grad;
  const bool train = mode == AuditMode::kTrain;
  target_.set_train(train);
  auto gen = at::make_generator<at::CPUGeneratorImpl>(probe_seed(opt_.seed, "repeatability", L));
  auto x = random_inputs(in, 2, L, gen);
  const uint64_t seed = probe_seed(opt_.seed, "repeatability/dropout", L);
  Repeat out;
  target_.snapshot_state(/*restore=*/false);
  if (train) at::manual_seed(seed);
  // The default generator of the CPU and, on another device, that device's: where a model's
  // forward draws its noise.
  std::vector<at::Generator> rngs{at::detail::getDefaultCPUGenerator()};
  if (!target_.device().is_cpu()) rngs.push_back(at::globalContext().defaultGenerator(target_.device()));
  const auto rng_state = [&] {
    std::vector<at::Tensor> states;
    for (auto& rng : rngs) {
      std::lock_guard<std::mutex> lock(rng.mutex());
      states.push_back(rng.get_state());
    }
    return at::cat(states);
  };
  const auto before = rng_state();
  auto y1 = run(x.clone());
  out.drew_random = !at::equal(before, rng_state());
  out.changed = target_.changed_state();
  if (train) at::manual_seed(seed);
  auto y2 = run(x.clone());
  target_.restore_state();
  const double scale = output_scale(y1);
  out.effect = (y2 - y1).abs().max().item<double>() / scale;
  return out;
}

// p = o * (1 + s * d) in p's dtype, each element rounded after every operation as the ATen
// expression rounds it (s * d, then + 1, then * o; no fused multiply-add), in one pass over memory
// instead of four: the floor jitters a whole model 33 times, and at an LM's embedding size these
// passes, not the forwards, were the floor's cost. Other dtypes and layouts take the ATen ops.
namespace {
template <class T>
__attribute__((optimize("fp-contract=off"))) void jitter_rows(T* p, const T* o, const T* d, T s, int64_t begin,
                                                                int64_t end) {
  for (int64_t i = begin; i < end; ++i) {
    const T t = s * d[i];
    const T u = t + T(1);
    p[i] = o[i] * u;
  }
}
}  // namespace

void write_jittered(at::Tensor p, const at::Tensor& o, const at::Tensor& d, double s) {
  const auto dtype = p.scalar_type();
  const bool flat = p.is_cpu() && o.is_cpu() && d.is_cpu() && p.is_contiguous() && o.is_contiguous() && d.is_contiguous() && o.scalar_type() == dtype &&
                    d.scalar_type() == dtype && o.numel() == p.numel() && d.numel() == p.numel();
  if (!flat || (dtype != at::kDouble && dtype != at::kFloat)) {
    p.copy_(d).mul_(s).add_(1).mul_(o);
    return;
  }
  at::parallel_for(0, p.numel(), 1 << 15, [&](int64_t begin, int64_t end) {
    if (dtype == at::kDouble)
      jitter_rows<double>(p.data_ptr<double>(), o.data_ptr<double>(), d.data_ptr<double>(), s, begin, end);
    else  // ATen casts a double scalar to the float32 operand's type first
      jitter_rows<float>(p.data_ptr<float>(), o.data_ptr<float>(), d.data_ptr<float>(), static_cast<float>(s), begin,
                         end);
  });
}

Prober::Floor Prober::precision_floor(const InPrecision& in, int64_t L, double delta, int segments) {
  require(in);
  at::NoGradGuard no_grad;
  target_.set_train(false);
  Floor out;
  auto gen = at::make_generator<at::CPUGeneratorImpl>(probe_seed(opt_.seed, "floor", L));
  const auto x = random_inputs(in, 2, L, gen);  // [2, L(, C)]
  // Per jittered tensor: the parameter, and of the part jittered (all of it, or the rows a forward
  // of x reads) its original values, directions and a buffer for its jittered values.
  struct Jittered {
    at::Tensor p, rows, originals, directions, buffer;
  };
  std::vector<Jittered> params;
  const auto rows_read = target_.jitter_rows_read(x);
  std::vector<at::Tensor> jittered;  // the parameters themselves (rows_read names them)
  for (auto& p : target_.jitter_parameters())
    if (p.defined() && at::isFloatingType(p.scalar_type()) && p.numel() > 0) jittered.push_back(p);
  // Drawn on the CPU (the audit's generator) for whole tensors: the same directions on every
  // device, and the same draws for the tensors after one whatever part of it is read.
  std::vector<at::Tensor> all_directions = draw_directions(gen, jittered).directions;
  for (size_t i = 0; i < jittered.size(); ++i) {
    Jittered j{jittered[i].detach(), {}, {}, {}, {}};
    for (const auto& rr : rows_read)
      if (rr.parameter.is_same(jittered[i])) j.rows = rr.rows;
    const at::Tensor directions = all_directions[i].to(j.p.device());
    all_directions[i].reset();  // a tensor read in part keeps only its rows' directions
    if (j.rows.defined()) {
      j.originals = j.p.index_select(0, j.rows);
      j.directions = directions.index_select(0, j.rows);
      j.buffer = at::empty_like(j.originals);
    } else {
      j.originals = j.p.clone();
      j.directions = directions;
    }
    params.push_back(std::move(j));
  }
  out.tensors = static_cast<int64_t>(params.size());
  out.inputs = in_.kind == InputSpec::Kind::kFeatures;
  out.segments = segments;
  if (params.empty() && !out.inputs) {
    out.why = "nothing to jitter: token inputs and no floating parameters";
    return out;
  }
  const auto x_dir = out.inputs ? at::randn(x.sizes(), gen, x.options()) : at::Tensor();
  auto x_jittered = out.inputs ? at::empty_like(x) : at::Tensor();
  auto restore = [&] {
    for (auto& j : params)
      if (j.rows.defined())
        j.p.index_copy_(0, j.rows, j.originals);
      else
        j.p.copy_(j.originals);
  };
  // Samples y(k delta), k = -2G .. 2G, along one line; segment g is the five samples centred on
  // c_g = -2G + 2 + 4g (neighbouring segments share an endpoint, no more). Its residual
  // |D2(delta) - D2(2 delta)/4| at c_g (a fourth difference: constant to cubic terms cancel, so
  // smooth arithmetic leaves O(delta^4), nothing) is what rounding does there. Per output
  // element the floor is the least residual over the G segments: rounding is in every segment
  // (every value moves by an ulp of float32 or more per step, so each sample rounds afresh), a
  // kink (ReLU, max-pooling, clamp, abs) or a jump (hard routing) crossed between two samples is
  // in the one segment holding both. A non-smooth residual survives only where every segment
  // crosses one, so the floor of a piecewise-linear float64 model is its rounding.
  const int G = std::max(1, segments);
  const int K = 2 * G;
  std::map<int, at::Tensor> y;  // k -> y(k delta) [2, L, K], float64; the current segment's five
  at::Tensor least;             // per element, the least segment residual so far
  at::Tensor d2, d2_twice, twice;  // the stencil's scratch, [2, L, K] float64
  double scale = 1e-300;
  // Every step writes into memory that exists already: the parameters in place, the stencil into
  // the scratch above. A fresh tensor per step of a large embedding is a fresh mapping (glibc
  // maps blocks over 32 MB anew each time) page-faulted through at every step, which cost far
  // more than the forwards. In-place, the ops and their order are those of the expression
  // originals * (1 + s * directions) (a product commutes exactly), so the floor is the same bits.
  try {
    for (int k = -K; k <= K; ++k) {
      const double s = k * delta;
      for (auto& j : params) {
        if (!j.rows.defined()) {
          write_jittered(j.p, j.originals, j.directions, s);
          continue;
        }
        write_jittered(j.buffer, j.originals, j.directions, s);
        j.p.index_copy_(0, j.rows, j.buffer);
      }
      if (out.inputs) write_jittered(x_jittered, x, x_dir, s);
      y[k] = run(out.inputs ? x_jittered : x).to(at::kDouble);
      if (k == 0) scale = output_scale(y[0]);
      const int c = k - 2;  // a segment's centre once its last sample is in
      if ((c + K - 2) % 4 != 0 || c - 2 < -K) continue;
      if (!d2.defined()) {
        d2 = at::empty_like(y[c]);
        d2_twice = at::empty_like(y[c]);
        twice = at::empty_like(y[c]);
      }
      twice.copy_(y[c]).mul_(2);
      at::add_out(d2, y[c + 1], y[c - 1]).sub_(twice);            // D2(d)
      at::add_out(d2_twice, y[c + 2], y[c - 2]).sub_(twice);      // D2(2d)
      const auto& residual = d2.sub_(d2_twice.div_(4)).abs_();  // |D2(d) - D2(2d) / 4|
      if (least.defined())
        at::minimum_out(least, least, residual);
      else
        least = residual.clone();
      for (int j = c - 2; j < c + 2; ++j) y.erase(j);  // c + 2 starts the next segment
    }
  } catch (const InputError& e) {
    restore();
    out.why = fmt::format("the jittered forward failed: {}", e.what());
    return out;
  }
  restore();
  out.value = least.max().item<double>() / scale;
  out.measurable = true;
  return out;
}

std::string Prober::try_forward(const InPrecision& in, int64_t L) {
  require(in);
  at::NoGradGuard no_grad;
  // Eval mode, whatever the probe before it left: the test is of the arithmetic, not of a mode.
  const bool training = target_.is_training();
  target_.set_train(false);
  auto gen = at::make_generator<at::CPUGeneratorImpl>(probe_seed(opt_.seed, "forward", L));
  std::string failed;
  try {
    run(random_inputs(in, 1, L, gen));
  } catch (const InputError& e) {
    failed = e.what();
  }
  target_.set_train(training);
  return failed;
}

// Eval mode, trials pairs of [1, L(, C)] sequences that differ only before L/2.
double Prober::past_effect(const InPrecision& in, int64_t L) {
  require(in);
  at::NoGradGuard no_grad;
  target_.set_train(false);
  auto gen = at::make_generator<at::CPUGeneratorImpl>(probe_seed(opt_.seed, "vacuity", L));
  const int64_t c = std::max<int64_t>(1, L / 2);
  double worst = 0;
  for (int64_t trial = 0; trial < std::max<int64_t>(1, opt_.trials); ++trial) {
    auto base = random_inputs(in, 1, L, gen);
    auto fresh = replacement_inputs(in_, base, random_inputs(in, 1, L, gen));
    auto pos = at::arange(L, at::kLong).view({1, L});
    auto replace = pos.lt(c);
    if (base.dim() == 3) replace = replace.unsqueeze(-1);
    auto y = run(at::cat({base, at::where(replace, fresh, base)}, 0));
    const double scale = output_scale(y[0]);
    auto d = (y[1] - y[0]).narrow(0, c, L - c).abs().max().item<double>() / scale;
    worst = std::max(worst, d);
  }
  return worst;
}

namespace {
// The target's state held for one forward and its backward, put back when both are done (also
// when either throws): BatchNorm saves its running statistics for the backward, so putting
// them back in place between the two voids the backward ("modified by an inplace operation").
class StateHold : NonCopyable {
 public:
  explicit StateHold(AuditTarget& t) : t_(t) { t_.hold_state(true); }
  ~StateHold() {
    try {
      t_.hold_state(false);
    } catch (...) {
    }
  }

 private:
  AuditTarget& t_;
};
}  // namespace

// One base sequence [1, L(, C)] expanded to chunks of rows [n, L(, C)]; row i picks output t_i.
std::vector<std::vector<double>> Prober::gradient_map(const InPrecision& in, int64_t L, AuditMode mode) {
  require(in);
  const bool train = mode == AuditMode::kTrain;
  target_.set_train(train);
  auto gen = at::make_generator<at::CPUGeneratorImpl>(probe_seed(opt_.seed, "gradient", L));
  auto base = random_inputs(in, 1, L, gen);
  std::vector<std::vector<double>> G(static_cast<size_t>(L), std::vector<double>(static_cast<size_t>(L), 0.0));
  at::Tensor w;
  // Rows that mix in this mode: one output position per pass, so row i's gradient is its own.
  const int64_t chunk = isolated(mode) ? 1 : std::max<int64_t>(1, opt_.batch);
  const uint64_t seed = probe_seed(opt_.seed, "gradient/dropout", L);
  for (int64_t start = 0; start < L; start += chunk) {
    const int64_t n = std::min(chunk, L - start);
    auto x = base.expand(base.dim() == 2 ? std::vector<int64_t>{n, L} : std::vector<int64_t>{n, L, base.size(2)})
                 .contiguous();
    StateHold hold(target_);
    if (train) at::manual_seed(seed);  // the map does not depend on what drew from the RNG before
    auto e = target_.embed(x).detach().clone().requires_grad_(true);
    record_forward(target_.dtype(), e.size(0), e.size(1));
    auto y = target_.forward_from_embedding(e);
    y = y.reshape({n, L, -1});
    if (!w.defined()) w = at::randn({y.size(2)}, gen, at::TensorOptions().dtype(y.scalar_type())).to(y.device());
    const auto on = at::TensorOptions().dtype(at::kLong).device(y.device());
    auto t_idx = at::arange(start, start + n, on);
    auto picked = y.index({at::arange(n, on), t_idx});  // [n, K]
    auto loss = (picked * w).sum();
    auto g = torch::autograd::grad({loss}, {e}, /*grad_outputs=*/{}, /*retain_graph=*/false)[0];
    auto norms = g.reshape({n, L, -1}).to(at::kDouble).pow(2).sum(-1).sqrt().cpu().contiguous();
    auto acc = norms.accessor<double, 2>();
    for (int64_t i = 0; i < n; ++i)
      for (int64_t s = 0; s < L; ++s) G[static_cast<size_t>(start + i)][static_cast<size_t>(s)] = acc[i][s];
  }
  return G;
}

}  // namespace grassaudit
