#pragma once
// Internal to the engine: the probes behind run_causality_audit (perturb and compare, the
// non-vacuity check, the gradient map), which fill the effect tables (audit/effect_table.h). See
// causality_audit.h for the method. Outside src/audit only the engine's own tests include it.
#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "audit/audit_options.h"
#include "audit/audit_target.h"
#include "audit/effect_table.h"
#include "audit/op_watch.h"
#include "util/error.h"
#include "util/non_copyable.h"

namespace grassaudit {

class InPrecision;  // audit/precision_switch.h: the precision a probe runs in

// A probe's seed: the audit's seed mixed with the name of the check that probes (or of what it
// draws) and what the probe varies by (a length, a mode), so that every probe draws its own
// stream without salts kept by hand.
uint64_t probe_seed(uint64_t audit_seed, const char* name, int64_t L = 0, int64_t variant = 0);

// rows x L (x C) random inputs from `gen`: token ids uniform over the vocabulary [rows, L]
// int64, or Gaussian features [rows, L, C] in `dtype` at the spec's scale.
at::Tensor random_inputs(const InputSpec& in, at::ScalarType dtype, int64_t rows, int64_t L, at::Generator& gen);

// What a perturbed position holds, from a fresh draw of random_inputs (same shape as base): the
// draw itself for features; for tokens always a DIFFERENT token, base shifted by 1 .. V-1. A
// uniform redraw keeps the old token with probability 1/V, which at the last cut (one position
// replaced) with a small vocabulary would hide the farthest reach in every trial now and then.
at::Tensor replacement_inputs(const InputSpec& in, const at::Tensor& base, const at::Tensor& fresh);

// p = o * (1 + s * d) written into p (same shape, contiguous float32 or float64 in one pass;
// otherwise through the ATen ops), bit for bit what the ATen expression computes.
void write_jittered(at::Tensor p, const at::Tensor& o, const at::Tensor& d, double s);

// y -> its scale, max |y| (never 0): what effects on a whole output are relative to.
double output_scale(const at::Tensor& y);

// x [1, L(, C)] as a batch of two identical rows [2, L(, C)]: whatever a model computes across
// rows then sees only this sequence, and BatchNorm in train mode (which refuses a batch of one)
// still runs. Keep row 0 of the output.
at::Tensor as_pair(const at::Tensor& x);

// A forward that did not run at one length: the model raised, or (NonFiniteOutput) returned NaN
// or Inf. The audit skips such a length of its schedule and refuses only at the length asked for.
class ForwardFailure : public InputError {
 public:
  ForwardFailure(const std::string& what, int64_t len, std::string reason)
      : InputError(what), len_(len), reason_(std::move(reason)) {}
  int64_t len() const { return len_; }
  const std::string& reason() const { return reason_; }

 private:
  int64_t len_;
  std::string reason_;
};

// The output contract's NaN/Inf error: an InputError the checks that skip what a model cannot
// run (a batch size, a prefix length) must not swallow. Its reason() is kNonFiniteReason.
inline constexpr char kNonFiniteReason[] = "NaN or Inf outputs";
class NonFiniteOutput : public ForwardFailure {
 public:
  NonFiniteOutput(const std::string& what, int64_t len) : ForwardFailure(what, len, kNonFiniteReason) {}
};

// Batch independence at one (mode, length): the largest relative move of a kept row when the
// other rows of its pass are replaced.
struct BatchEffect {
  double effect = 0;
  int64_t row = -1, position = -1;
  std::vector<double> by_position;  // [L]: the largest over kept rows and trials at each t
};

// Length independence at one prefix length p: the largest relative difference between y_t of
// the prefix run and of the full run, over the compared positions t < p - guard.
struct PrefixEffect {
  int64_t prefix_len = 0;
  double effect = 0;
  int64_t position = -1;
  std::string error;  // the model does not run at this length (the check skips it)
};

// What probes ran: their count and the largest effect they recorded (the float32 screen keeps no
// tables), and the tables decided from them (the decisive ones).
struct Pass {
  std::map<std::pair<AuditMode, int64_t>, EffectTable> tables;  // (mode, L)
  double max_effect = 0;
  int64_t probes = 0;
  // The largest cell of its tables (0: none).
  double max_cell() const;
  // The precision that decided them: float64 where any table was decided in float64, else that
  // of its tables (Undefined: none).
  at::ScalarType dtype() const;
};

class Prober {
 public:
  Prober(AuditTarget& target, const AuditOptions& opt);

  // Every probe runs in the precision `in` holds (the target must be there: std::logic_error
  // otherwise), and every table it fills says so (EffectTable::dtype).

  // One (mode, length) table, every cut.
  EffectTable probe_table(const InPrecision& in, AuditMode mode, int64_t L, Pass& pass, Side side = Side::kFuture);

  // The given cuts (ascending; empty: all) of a table, exactly the probe rows the full table uses:
  // the float64 re-run of the cuts that moved, or a table probed in parts. Other cuts stay zero.
  // `done` (optional), asked before each pass with the table so far and the first cut that pass
  // would probe: true ends the table there (its later cuts stay zero). The passes before are
  // those of the whole table, row for row, so what they measured is the same bits.
  using TableDone = std::function<bool(const EffectTable& so_far, int64_t next_cut)>;
  // A table probed in parts (`parts`, optional): its base pass runs once and is kept here, and
  // each call probes on from the first cut the calls before it left (next_cut) and returns the
  // table so far, which is also what its `done` sees. The parts together are the passes of one
  // call, row for row.
  struct TableParts {
    at::Tensor y_base, scale;  // the base pass [rows, L, K] and its rows' scales [rows]
    int64_t next_cut = 1;      // the first cut not probed yet (L: none left)
    EffectTable table;         // the cells of the parts so far
  };
  EffectTable rerun_cuts(const InPrecision& in, AuditMode mode, int64_t L, const std::vector<int64_t>& cuts,
                         Pass& pass, Side side = Side::kFuture, const TableDone& done = {},
                         TableParts* parts = nullptr);
  // The screen: every cut from `from_cut` on with the first trial's rows only (the same draws as
  // the whole table's trial 0, passes of up to --batch rows of that trial, no more rows than it
  // has). Exact zeros here mean trial 0 moved nothing at those cuts; what the other trials would
  // show is not measured. Only whether anything moved is read: a pass of another shape rounds
  // the rows it moves differently, but moves exactly the rows a pass of any shape moves.
  EffectTable screen_table(const InPrecision& in, AuditMode mode, int64_t L, Pass& pass, Side side = Side::kFuture,
                           int64_t from_cut = 1);
  // rerun_cuts of every cut where `first` saw a non-zero effect. A cut that moved nothing at
  // all in float32 has nothing to tell apart: its zeros stand.
  EffectTable rerun_nonzero(const InPrecision& in, AuditMode mode, const EffectTable& first, Pass& pass,
                            Side side = Side::kFuture);

  // Rows of a pass that mix in `modes`: while this lives, those modes are probed one row per
  // pass, so that what one row's inputs do to another cannot read as a time dependence. Each
  // check that probes rows of a pass holds one over its own probes (the modes are the batch
  // check's declared output); the prober keeps no isolation of its own after it.
  class IsolatedRows : NonCopyable {
   public:
    IsolatedRows(Prober& prober, std::vector<AuditMode> modes) : prober_(prober), before_(prober.isolated_) {
      prober_.isolated_ = std::move(modes);
    }
    ~IsolatedRows() { prober_.isolated_ = before_; }

   private:
    Prober& prober_;
    std::vector<AuditMode> before_;
  };
  bool isolated(AuditMode mode) const { return std::find(isolated_.begin(), isolated_.end(), mode) != isolated_.end(); }

  // Discrete routing as the probes see it (checks/routing_search.h).
  // The selections over time of the next forward at length L (audit/op_watch.h): armed by
  // watch_ops, recorded by the first forward at that length, read by watched_ops (nullopt until
  // that forward ran). The watch rides on a forward the checks run anyway: it costs none.
  void watch_ops(int64_t L) {
    watch_len_ = L;
    watched_.reset();
  }
  const std::optional<std::vector<DiscreteOp>>& watched_ops() const { return watched_; }
  // A cell of a table probed with several trials that was exactly zero in one trial and moved by
  // kDiscreteJump or more in another: a dependence that switches on and off, not one that
  // rounding or a smooth function makes (the first such cell of each side, nullopt: none).
  struct MixedCell {
    AuditMode mode = AuditMode::kEval;
    int64_t L = 0, t = 0, c = 0;
  };
  static constexpr double kDiscreteJump = 1e-3;
  const std::optional<MixedCell>& mixed_cell(Side side) const { return side == Side::kFuture ? mixed_future_ : mixed_past_; }

  // Single-position replacements (the routing search): `bases` base sequences, and for each
  // position of `positions` and each base, `substitutions` rows with only that position
  // replaced (each by a different draw). Cell (t, c) of the table, as in the cut tables: future
  // side, c = the replaced position s and t < s; past side, c = s + 1 and t > s, so that
  // cut_distance is the distance |t - s| itself. `round` seeds its own draws. Passes of --batch
  // rows (a multiple of `bases`, tiled as the cut tables' are: run_passes).
  EffectTable single_position_table(const InPrecision& in, AuditMode mode, int64_t L,
                                    const std::vector<int64_t>& positions, int64_t bases, int64_t substitutions,
                                    int64_t round, Side side);

  // The rows of one table's passes: row r is compared with base r % T (T = bases.size(0)) and
  // fills column columns[r / per_column] of the table (a cut; for a single position, the cut
  // whose compared outputs that position can move).
  struct ProbeRows {
    AuditMode mode = AuditMode::kEval;
    int64_t L = 0;
    Side side = Side::kFuture;
    at::ScalarType dtype = at::ScalarType::Undefined;
    at::Tensor bases;              // [T, L(, C)]
    at::Tensor rows;               // [R, L(, C)]
    std::vector<int64_t> columns;  // [R / per_column]
    int64_t per_column = 1;
    uint64_t dropout_seed = 0;     // train mode: the RNG state before every pass
  };
  // The rows of a cut table (first_trial_only: trial 0's, the screen's) and of a single-position
  // table; replaced_rows builds either from its bases and replacements.
  ProbeRows replaced_rows(const InPrecision& in, AuditMode mode, int64_t L, Side side, const at::Tensor& bases,
                          const at::Tensor& row_base, const at::Tensor& fresh, at::Tensor replace);
  ProbeRows cut_rows(const InPrecision& in, AuditMode mode, int64_t L, std::vector<int64_t> cuts, Side side,
                     bool first_trial_only);
  ProbeRows position_rows(const InPrecision& in, AuditMode mode, int64_t L, const std::vector<int64_t>& positions,
                          int64_t B, int64_t K, int64_t round, Side side);
  // Batch independence: passes of max(2, batch) rows; odd rows replaced, even rows kept.
  // screen: the trials after the first run only when it moved.
  BatchEffect batch_effect(const InPrecision& in, AuditMode mode, int64_t L, bool screen);

  // Length independence (eval mode, one sequence per pass, run_alone): each prefix length of `prefix_lens`
  // against the full length L, comparing positions t < p - guard.
  std::vector<PrefixEffect> prefix_effects(const InPrecision& in, int64_t L, const std::vector<int64_t>& prefix_lens,
                                           int64_t guard);

  // The same batch [2, L] twice in `mode` (train mode: the RNG reset to the same state before
  // each pass; nothing restored between them): the largest relative difference of the outputs
  // (bitwise: 0 for a deterministic, stateless model) and the state the first pass changed.
  struct Repeat {
    double effect = 0;
    std::string changed;
    bool drew_random = false;  // the first call moved torch's default CPU generator (it draws noise)
  };
  Repeat repeat_effect(const InPrecision& in, AuditMode mode, int64_t L);

  // The model's own rounding floor in the precision `in` holds (eval mode, two random rows
  // [2, L]): every floating parameter and a features input scaled by (1 + k delta u), u ~ N(0, 1)
  // fixed, k = -2G .. 2G along one line, cut into G segments of five samples that share only
  // their endpoints. In each segment the second difference y(+d) + y(-d) - 2 y(0) of smooth
  // arithmetic is c d^2 + rounding, so D2(d) - D2(2d) / 4 cancels the c d^2 term and leaves what
  // rounding does when every value moves by more than an ulp of its precision. Per output
  // element the least of the G residuals is kept (a kink or jump crossed inside one segment does
  // not reach the others), and the floor is the largest of those relative to max |y|: ~1e-15 for
  // a true float64 forward, ReLU networks included, ~1e-8 when part of it runs in float32.
  // Jittered tensors are restored bit for bit. measurable false: nothing to jitter (token inputs
  // and no parameters) or the jittered forward failed (`why`).
  struct Floor {
    double value = 0;
    int64_t tensors = 0;      // parameter tensors jittered
    bool inputs = false;      // a features input jittered too
    int segments = 1;         // G
    bool measurable = false;
    std::string why;
  };
  Floor precision_floor(const InPrecision& in, int64_t L, double delta, int segments);

  // A forward pass of one random [1, L] input: empty, or why it failed.
  std::string try_forward(const InPrecision& in, int64_t L);

  // Non-vacuity: replace the first half, keep the rest; how much do later outputs move?
  double past_effect(const InPrecision& in, int64_t L);

  // Method 2 in `mode` (train mode: the RNG reset before each pass): row i differentiates
  // <w, y_{t_i}> w.r.t. every input embedding; entries s > t_i must vanish. Returns
  // G[t][s] = ||d<w, y_t>/d e_s||. The target's state is held from each forward until its
  // backward is done and put back after it (AuditTarget::hold_state).
  std::vector<std::vector<double>> gradient_map(const InPrecision& in, int64_t L, AuditMode mode = AuditMode::kEval);

 private:
  // The target in the precision `in` holds, or std::logic_error (a probe outside its scope).
  void require(const InPrecision& in) const;
  // random_inputs in the precision `in` holds, from the audit's own generator (not the global one).
  at::Tensor random_inputs(const InPrecision& in, int64_t rows, int64_t L, at::Generator& gen);
  // Runs the target and checks the output contract: [rows, L, ...] and (check_finite) finite.
  at::Tensor run(const at::Tensor& x, bool check_finite = true);
  // max over features of |y - y_ref| [rows, L, K] -> [rows, L], in the outputs' dtype, through
  // one reused buffer: at an LM's vocabulary size a fresh difference, its abs and a finiteness
  // pass over y cost a sizeable share of the forward itself (reports/bench). y comes from
  // run(x, false): y_ref was checked finite, so a finite result proves y finite; otherwise y
  // gets the full check (and its one-line error).
  at::Tensor max_abs_diff(const at::Tensor& y, const at::Tensor& y_ref);
  void check_finite(const at::Tensor& y);
  // One sequence [1, L(, C)] on its own (two identical rows): y [1, L, K].
  at::Tensor run_alone(const at::Tensor& x);
  // How run_passes runs a table's rows.
  struct PassPlan {
    const TableDone* done = nullptr;  // asked before each pass (rerun_cuts)
    TableParts* parts = nullptr;      // a table probed in parts (rerun_cuts)
    bool screen = false;              // passes of no more rows than there are (screen_table)
    bool trial_flags = true;          // note a cell that switched between trials (mixed_cell)
    bool sharded = true;              // data-parallel: each rank its own chunks (audit_shard.h)
  };
  // The passes of `rows` into `table` (its cells raised) and `pass` (probes, largest effect).
  void run_passes(const ProbeRows& rows, EffectTable& table, Pass& pass, const PassPlan& plan);

  AuditTarget& target_;
  const AuditOptions& opt_;
  InputSpec in_;
  std::vector<AuditMode> isolated_;
  std::optional<int64_t> watch_len_;
  std::optional<std::vector<DiscreteOp>> watched_;
  std::optional<MixedCell> mixed_future_, mixed_past_;
  at::Tensor diff_buffer_;  // max_abs_diff's scratch, reallocated when shape or dtype change
};

}  // namespace grassaudit
