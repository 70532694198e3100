#include "audit/property_search.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/grad_mode.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <nlohmann/json.hpp>
#include <algorithm>
#include <chrono>
#include <iostream>
#include <memory>
#include <optional>

#include "audit/audit_prober.h"
#include "audit/precision_switch.h"
#include "audit/property_runner.h"
#include "runtime/rng_guard.h"
#include "util/error.h"
#include "util/error_text.h"

namespace grassaudit {
namespace {

enum class Perturbation { kResample, kSwap, kConstant, kScaled };
constexpr int32_t kPerturbations = 4;
const char* perturbation_name(Perturbation p) {
  switch (p) {
    case Perturbation::kResample: return "resample";
    case Perturbation::kSwap: return "swap";
    case Perturbation::kConstant: return "constant";
    case Perturbation::kScaled: return "scaled";
  }
  return "?";
}

// One drawn case.
struct Case {
  int64_t L = 0, cut = 0, batch = 0;
  Perturbation perturbation = Perturbation::kResample;
  AuditMode mode = AuditMode::kEval;
  uint64_t seed = 0;
};

// What broke on a case: the property, the output positions that moved, the largest move.
struct Failure {
  Case c;
  ViolationKind kind;  // future | length | batch | window
  std::vector<int64_t> positions;
  double effect = 0;
};

class CaseChecker {
 public:
  // Every case in the precision `in` holds.
  CaseChecker(AuditTarget& target, const InPrecision& in, const AuditOptions& opt, double threshold,
              int64_t length_guard)
      : target_(target), dtype_(in.dtype()), opt_(opt), in_(target.input()), threshold_(threshold),
        length_guard_(length_guard) {}

  // The first property the case breaks, if any.
  std::optional<Failure> check(const Case& c) {
    at::NoGradGuard no_grad;
    target_.set_train(c.mode == AuditMode::kTrain);
    auto gen = at::make_generator<at::CPUGeneratorImpl>(c.seed);
    auto x = draw(c.batch, c.L, gen);                                   // [B, L(, C)]
    auto y = run(x, c);                                                 // [B, L, K]
    const double scale = output_scale(y);
    auto pos = at::arange(c.L, at::kLong).view({1, c.L});
    // Future: inputs from the cut on perturbed; outputs t < cut - K compared.
    if (auto f = compare(c, ViolationKind::kFuture, y, run(perturb(x, pos.ge(c.cut), c, gen), c), 0, c.cut - opt_.lookahead, scale))
      return f;
    // Window: inputs before the cut perturbed; outputs t >= cut + W - 1 compared.
    if (opt_.window) {
      const int64_t from = c.cut + *opt_.window - 1;
      if (auto f = compare(c, ViolationKind::kWindow, y, run(perturb(x, pos.lt(c.cut), c, gen), c), from, c.L, scale)) return f;
    }
    // Length: the prefix x_0 .. x_{cut-1} alone; outputs t < cut - guard compared. Eval mode
    // only: a shorter pass draws different dropout masks.
    if (opt_.length_check && c.mode == AuditMode::kEval && c.cut - length_guard_ > 0 && c.cut >= opt_.min_seq_len) {
      auto y_p = run(x.narrow(1, 0, c.cut).contiguous(), c);
      if (auto f = compare(c, ViolationKind::kLength, y.narrow(1, 0, c.cut), y_p, 0, c.cut - length_guard_, scale)) return f;
    }
    // Batch: every row but the first redrawn; row 0 compared everywhere.
    if (opt_.batch_check && c.batch >= 2) {
      auto x2 = x.clone();
      x2.narrow(0, 1, c.batch - 1).copy_(draw(c.batch - 1, c.L, gen));
      if (auto f = compare(c, ViolationKind::kBatch, y.narrow(0, 0, 1), run(x2, c).narrow(0, 0, 1), 0, c.L, scale)) return f;
    }
    return std::nullopt;
  }

 private:
  at::Tensor draw(int64_t rows, int64_t L, at::Generator& gen) { return random_inputs(in_, dtype_, rows, L, gen); }

  // x with the positions where `where` [1, L] holds perturbed by the case's kind:
  // resample: fresh draws (for tokens a different token at every position, replacement_inputs);
  // swap: those positions in reverse order; constant: token 0 / 0.0;
  // scaled: features x3, tokens (3 id + 1) mod V (a bijection: the "scale" of a token id).
  at::Tensor perturb(const at::Tensor& x, const at::Tensor& where, const Case& c, at::Generator& gen) {
    at::Tensor changed;
    switch (c.perturbation) {
      case Perturbation::kResample: changed = replacement_inputs(in_, x, draw(x.size(0), x.size(1), gen)); break;
      case Perturbation::kSwap: {
        auto idx = at::arange(c.L, at::kLong);
        auto sel = where.view({c.L});
        auto inside = idx.masked_select(sel);                            // the perturbed positions
        auto perm = idx.clone();
        perm.masked_scatter_(sel, inside.flip({0}));
        changed = x.index_select(1, perm);
        break;
      }
      case Perturbation::kConstant: changed = at::zeros_like(x); break;
      case Perturbation::kScaled:
        changed = in_.kind == InputSpec::Kind::kTokens ? (x * 3 + 1).remainder(in_.vocab_tensor()) : x * 3;
        break;
    }
    auto w = x.dim() == 3 ? where.unsqueeze(-1) : where;
    return at::where(w, changed, x).contiguous();
  }

  at::Tensor run(const at::Tensor& x, const Case& c) {
    if (c.mode == AuditMode::kTrain) at::manual_seed(probe_seed(c.seed, "property/dropout"));
    at::Tensor y;
    try {
      // A batch of one runs as two identical rows (as_pair; row 0 kept), as the prober's
      // run_alone does: BatchNorm in train mode refuses a batch of one.
      record_forward(dtype_, std::max<int64_t>(2, x.size(0)), x.size(1));
      y = x.size(0) == 1 ? target_.forward(as_pair(x)).narrow(0, 0, 1) : target_.forward(x);
    } catch (const InputError& e) {
      throw InputError(fmt::format("the model failed at L={}, batch {}: {}", x.size(1), x.size(0),
                                   e.what()));
    }
    if (y.dim() < 2 || y.size(0) != x.size(0) || y.size(1) != x.size(1) || !at::isFloatingType(y.scalar_type()))
      throw InputError(fmt::format("property search: output shape [{}] does not start with [B, L] = [{}, {}]",
                                   fmt::join(y.sizes().vec(), ", "), x.size(0), x.size(1)));
    return y.detach().reshape({x.size(0), x.size(1), -1}).to(at::kDouble);
  }

  // Positions from..to-1 of a and b [B, n, K] (same shapes up to `to`): the ones that moved.
  std::optional<Failure> compare(const Case& c, ViolationKind kind, const at::Tensor& a, const at::Tensor& b,
                                 int64_t from, int64_t to, double scale) {
    if (to <= from) return std::nullopt;
    auto d = (a.narrow(1, from, to - from) - b.narrow(1, from, to - from)).abs().amax({0, 2}).div(scale).cpu().contiguous();
    auto acc = d.accessor<double, 1>();
    Failure f{c, kind, {}, 0.0};
    for (int64_t i = 0; i < to - from; ++i)
      if (acc[i] > threshold_) {
        f.positions.push_back(from + i);
        f.effect = std::max(f.effect, acc[i]);
      }
    if (f.positions.empty()) return std::nullopt;
    return f;
  }

  AuditTarget& target_;
  at::ScalarType dtype_;
  const AuditOptions& opt_;
  InputSpec in_;
  double threshold_;
  int64_t length_guard_;
};

// RapidCheck shrinks every drawn value, but the cut is drawn after the length (its range
// depends on L), so a shrink can stop above the smallest failing (L, cut). With the other drawn
// values kept, this tries every smaller (L, cut) in order and returns the first that fails:
// the minimal counterexample. Bounded (the shrunk L is small in practice).
Failure sweep_smaller(CaseChecker& checker, const Failure& found, int64_t shortest) {
  int budget = 4000;
  for (int64_t L = std::max<int64_t>(2, shortest); L <= found.c.L; ++L)
    for (int64_t cut = 1; cut < L && budget > 0; ++cut, --budget) {
      if (L == found.c.L && cut >= found.c.cut) return found;
      Case c = found.c;
      c.L = L;
      c.cut = cut;
      if (auto f = checker.check(c)) return *f;
    }
  return found;
}

PropertyCounterexample counterexample_of(const Failure& f, int64_t cases, const std::string& precision) {
  PropertyCounterexample c;
  c.kind = f.kind;
  c.seq_len = f.c.L;
  c.cut = f.c.cut;
  c.batch = f.c.batch;
  c.perturbation = perturbation_name(f.c.perturbation);
  c.mode = mode_name(f.c.mode);
  c.seed = f.c.seed;
  c.positions = f.positions;
  c.effect = f.effect;
  c.precision = precision;
  c.cases = cases;
  return c;
}

}  // namespace

namespace {
#ifdef GRASSAUDIT_PROPERTY_RUNNER_LINKED
GaPropertySearch g_runner = &grassaudit_property_search;
std::string g_why_missing;
#else
GaPropertySearch g_runner = nullptr;
std::string g_why_missing = "this build has no property runner";
#endif
}  // namespace

void set_property_search_runner(GaPropertySearch runner, const std::string& why_missing) {
  g_runner = runner;
  g_why_missing = runner ? "" : why_missing;
}

bool has_property_search() { return g_runner != nullptr; }

void require_property_search() {
  if (!g_runner) throw InputError("--property: no property search here (" + g_why_missing + ")");
}

void run_property_search(AuditTarget& target, const AuditOptions& opt, int64_t cases, AuditResult& r) {
  require_property_search();
  const GaPropertySearch runner = g_runner;
  CpuRngGuard rng;
  const bool was_training = target.is_training();
  Prober prober(target, opt);
  PrecisionSwitch prec(target, prober, opt.seq_len);
  std::string precision;
  std::optional<Failure> last_failure;
  std::exception_ptr error;
  int outcome = 0;
  char runner_error[512] = {0};
  {
    const InPrecision in = prec.in_deciding();  // every case in float64 where the target runs there
    precision = dtype_name(in.dtype());
    CaseChecker checker(target, in, opt, prec.threshold(),  // above the model's measured floor
                        std::max(opt.lookahead, r.leak_horizon));
    std::vector<AuditMode> modes;
    if (opt.eval_mode()) modes.push_back(AuditMode::kEval);
    if (opt.train_mode()) modes.push_back(AuditMode::kTrain);
    const int64_t max_batch = std::max<int64_t>(2, std::min<int64_t>(opt.batch, 8));

    // What the callback keeps between cases: RapidCheck's shrinking ends on the minimal failing
    // case, the last one that failed; an error stops the checks (every later case then "holds")
    // and is raised once the runner returns, so no exception crosses the runner's C interface.
    struct Search {
      CaseChecker& checker;
      const std::vector<AuditMode>& modes;
      std::optional<Failure> last_failure;
      std::exception_ptr error;
    } search{checker, modes, std::nullopt, nullptr};
    GaPropertyCheck check = [](void* ctx, const GaPropertyCase* g) -> int {
      auto& s = *static_cast<Search*>(ctx);
      if (s.error) return 1;
      try {
        Case c;
        c.L = g->len;
        c.cut = g->cut;
        c.batch = g->batch;
        c.perturbation = static_cast<Perturbation>(g->perturbation);
        c.mode = s.modes.at(static_cast<size_t>(g->mode));
        c.seed = g->seed;
        auto f = s.checker.check(c);
        if (f) s.last_failure = f;
        return f ? 0 : 1;
      } catch (...) {
        s.error = std::current_exception();
        return 1;
      }
    };
    const GaPropertySpace space{opt.seed, static_cast<int32_t>(cases), opt.seq_len, max_batch, kPerturbations,
                                static_cast<int32_t>(modes.size()), opt.min_seq_len};
    outcome = runner(&space, check, &search, runner_error, sizeof runner_error);
    last_failure = search.last_failure;
    error = search.error;
    if (outcome == 1 && !error && last_failure) {
      try {
        last_failure = sweep_smaller(checker, *last_failure, opt.min_seq_len);
      } catch (...) {
        error = std::current_exception();
      }
    }
  }
  prec.restore_own();
  target.set_train(was_training);
  // A case the model cannot run (a drawn length or batch size it refuses, NaN outputs) ends the
  // search with a note; the audit's answer stands. Anything not a std::exception (the Python
  // package's KeyboardInterrupt) ends the audit.
  std::string stopped;
  if (error) {
    try {
      std::rethrow_exception(error);
    } catch (const std::exception& e) {
      stopped = first_meaningful_line(e.what());
    }
  }
  if (outcome < 0 && stopped.empty()) stopped = runner_error;
  for (const auto& n : prec.notes())  // the main audit may have said the same already
    if (std::find(r.notes.begin(), r.notes.end(), n) == r.notes.end()) r.notes.push_back(n);
  if (!stopped.empty())
    r.notes.push_back(fmt::format("property search stopped early: {} ({})", stopped,
                                  last_failure ? "the counterexample is the smallest failing case found before"
                                               : "no case had failed before"));
  if (!last_failure) {
    if (stopped.empty()) r.notes.push_back(fmt::format("property search: {} cases passed ({})", cases, precision));
    return;
  }
  const Failure& f = *last_failure;
  r.counterexample = counterexample_of(f, cases, precision);
  Evidence ev;
  ev.mode = mode_name(f.c.mode);
  ev.seq_len = f.c.L;
  ev.cut = f.c.cut;
  ev.position = f.positions.front();
  ev.effect = f.effect;
  ev.precision = precision;
  ev.text = fmt::format("property search (minimal case): L={}, cut {}, batch {}, {} perturbation, {} mode: positions "
                        "{} moved by up to {:.3g} ({} property)",
                        f.c.L, f.c.cut, f.c.batch, perturbation_name(f.c.perturbation), ev.mode,
                        fmt::join(f.positions, ","), f.effect, violation_kind_name(f.kind));
  r.notes.push_back(ev.text);
  bool known = false;
  for (const auto& v : r.violations) known = known || v.kind == f.kind;
  if (!known) {
    Violation v{f.kind, 0, 0, ev};
    if (f.kind == ViolationKind::kFuture) {
      v.horizon = f.c.cut - f.positions.front();  // at least this far ahead
      v.allowed = opt.lookahead;
    } else if (f.kind == ViolationKind::kWindow) {
      v.horizon = f.positions.back() - (f.c.cut - 1);
      v.allowed = *opt.window - 1;
    }
    r.violations.push_back(v);
  }
}

}  // namespace grassaudit
