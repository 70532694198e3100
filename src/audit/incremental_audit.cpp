#include "audit/incremental_audit.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/grad_mode.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <random>

#include "audit/audit_prober.h"
#include "audit/precision_switch.h"
#include "runtime/rng_guard.h"
#include "audit/audit_refusal.h"
#include "util/error.h"

namespace grassaudit {

void require_incremental(AuditTarget& target) {
  if (const auto missing = target.incremental_missing(); !missing.empty())
    throw AuditRefusal(AuditRefusal::Reason::kNoIncremental, fmt::format("{}: {}", target.describe(), missing));
}

std::unique_ptr<IncrementalRun> AuditTarget::start_incremental(int64_t) {
  require_incremental(*this);
  throw InputError(describe() + ": no incremental path");  // a target that says it has one must override this
}

std::vector<Partition> incremental_partitions(int64_t L, uint64_t seed, int64_t random_partitions, bool cheap) {
  std::vector<Partition> out;
  auto prefill_then = [&](int64_t prefill, int64_t chunk) {
    Partition p;
    p.name = fmt::format("prefill {} then {}", prefill, chunk == 1 ? "single steps" : fmt::format("chunks of {}", chunk));
    p.sizes.push_back(prefill);
    for (int64_t left = L - prefill; left > 0; left -= chunk) p.sizes.push_back(std::min(chunk, left));
    return p;
  };
  std::mt19937_64 rng(probe_seed(seed, "incremental/partitions", L));
  auto random_partition = [&](int k) {
    Partition p;
    p.name = fmt::format("random chunks #{}", k + 1);
    for (int64_t left = L; left > 0;) {
      const int64_t n = std::min<int64_t>(left, std::uniform_int_distribution<int64_t>(1, 7)(rng));
      p.sizes.push_back(n);
      left -= n;
    }
    return p;
  };
  if (cheap) {
    out.push_back(prefill_then(std::max<int64_t>(1, L / 2), 1));
    out.push_back(random_partition(0));
    return out;
  }
  out.push_back(Partition{"one position at a time", std::vector<int64_t>(static_cast<size_t>(L), 1)});
  if (L >= 2) out.push_back(prefill_then(L / 2, 1));
  if (L >= 5) out.push_back(prefill_then(std::max<int64_t>(1, L / 4), 3));
  for (int k = 0; k < random_partitions; ++k) out.push_back(random_partition(k));
  return out;
}

namespace {

// What one precision pass measured.
struct Measured {
  std::vector<std::vector<double>> by_position;  // [partition][t]: relative difference at t
  double fresh_state = 0, forward_after = 0;
  double max() const {
    double m = std::max(fresh_state, forward_after);
    for (const auto& v : by_position)
      for (double e : v) m = std::max(m, e);
    return m;
  }
};

// y [B, n, ...] -> [B, n, K], checked against the rows and chunk it answers.
at::Tensor flat(const at::Tensor& y, int64_t B, int64_t n, const std::string& what) {
  if (y.dim() < 2 || y.size(0) != B || y.size(1) != n)
    throw InputError(fmt::format("{} returned shape [{}], expected [B, n, ...] = [{}, {}, ...]", what,
                                 fmt::join(y.sizes().vec(), ", "), B, n));
  if (!at::isFloatingType(y.scalar_type())) throw InputError(fmt::format("{} returned a non-floating output", what));
  return y.detach().reshape({B, n, -1}).to(at::kDouble);
}

class Checker {
 public:
  Checker(AuditTarget& t, const IncrementalOptions& o, const std::vector<Partition>& parts)
      : target_(t), opt_(o), parts_(parts) {}

  // Every partition and the isolation, in the precision `in` holds.
  Measured measure(const InPrecision& in) {
    at::NoGradGuard no_grad;
    target_.set_train(false);
    const int64_t B = opt_.batch, L = opt_.seq_len;
    auto gen = at::make_generator<at::CPUGeneratorImpl>(probe_seed(opt_.seed, "incremental", L));
    const at::Tensor x = random_inputs(target_.input(), in.dtype(), B, L, gen);  // rows differ
    target_.snapshot_state(/*restore=*/false);  // the module as loaded: put back before every run
    struct Restore {
      AuditTarget& t;
      ~Restore() {
        try {
          t.end_state_tracking();
        } catch (...) {
        }
      }
    } restore{target_};
    record_forward(target_.dtype(), B, L);
    const at::Tensor y = flat(target_.forward(x), B, L, "forward");  // [B, L, K]
    const double scale = output_scale(y);
    auto steps = [&](const Partition& p) {
      auto run = target_.start_incremental(B);
      std::vector<at::Tensor> outs;
      int64_t at_pos = 0;
      for (int64_t n : p.sizes) {
        record_forward(target_.dtype(), B, n);
        outs.push_back(flat(run->step(x.narrow(1, at_pos, n).contiguous()), B, n, "step"));
        at_pos += n;
      }
      auto inc = at::cat(outs, 1);
      if (inc.size(2) != y.size(2))
        throw InputError(fmt::format("step outputs have {} values per position, forward's {}", inc.size(2), y.size(2)));
      return inc;
    };
    Measured m;
    for (const auto& p : parts_) {
      target_.restore_state();
      auto d = (steps(p) - y).abs().amax({0, 2}).div(scale).cpu().contiguous();  // [L], read back
      m.by_position.emplace_back(d.data_ptr<double>(), d.data_ptr<double>() + L);
    }
    // Isolation, on one module: two runs from fresh states, then forward again.
    target_.restore_state();
    const auto first = steps(parts_.front());
    const auto second = steps(parts_.front());
    m.fresh_state = (second - first).abs().max().item<double>() / scale;
    record_forward(target_.dtype(), B, L);
    m.forward_after = (flat(target_.forward(x), B, L, "forward") - y).abs().max().item<double>() / scale;
    return m;
  }

 private:
  AuditTarget& target_;
  const IncrementalOptions& opt_;
  const std::vector<Partition>& parts_;
};

}  // namespace

IncrementalResult run_incremental_audit(AuditTarget& target, const IncrementalOptions& opt) {
  const auto t0 = std::chrono::steady_clock::now();
  if (opt.seq_len < 1) throw InputError(fmt::format("--seq-len must be >= 1, got {}", opt.seq_len));
  require_incremental(target);
  const at::ScalarType own = target.dtype();
  const bool was_training = target.is_training();
  struct Back {  // the target comes back in its mode however this ends (its dtype: the PrecisionSwitch)
    AuditTarget& t;
    bool training;
    ~Back() {
      try {
        t.set_train(training);
      } catch (...) {
      }
    }
  } back{target, was_training};

  CpuRngGuard rng;  // the gate runs this inside training: the global RNG comes back as it was
  IncrementalResult res;
  res.partitions = incremental_partitions(opt.seq_len, opt.seed, opt.random_partitions, opt.cheap);
  Checker checker(target, opt, res.partitions);
  res.precision = dtype_name(own);
  AuditOptions aopt;
  aopt.seq_len = opt.seq_len;
  aopt.seed = opt.seed;
  Prober prober(target, aopt);
  PrecisionSwitch prec(target, prober, opt.seq_len);
  Measured decisive;
  if (own == at::kDouble) {
    decisive = checker.measure(prec.in_own());
    res.max_effect_own = decisive.max();
    if (decisive.max() > 0) prec.establish();  // exact zeros decide by themselves; else the floor rule
  } else {
    const InPrecision in = prec.in_deciding();
    decisive = checker.measure(in);
    if (in.float64())
      res.precision = "float64";
    else  // float64 unavailable: the own dtype against its measured float32 floor
      res.max_effect_own = decisive.max();
  }
  if (prec.floor()) {
    res.threshold = prec.threshold();
    res.precision_floor = prec.floor();
    res.notes = prec.notes();
  }
  prec.restore_own();
  res.max_effect = decisive.max();
  const double thr = res.threshold;
  for (size_t i = 0; i < res.partitions.size(); ++i) {
    const auto& d = decisive.by_position[i];
    for (size_t t = 0; t < d.size(); ++t) {
      if (!(d[t] > thr)) continue;
      res.consistent = false;
      if (!res.first_position || static_cast<int64_t>(t) < *res.first_position) {
        res.first_position = static_cast<int64_t>(t);
        res.first_partition = res.partitions[i].name;
        res.first_effect = d[t];
      }
      break;
    }
  }
  res.fresh_state_effect = decisive.fresh_state;
  res.forward_after_steps_effect = decisive.forward_after;
  res.isolation = !(decisive.fresh_state > thr) && !(decisive.forward_after > thr);
  Evidence& ev = res.evidence;
  ev.precision = res.precision;
  ev.seq_len = opt.seq_len;
  if (!res.consistent) {
    ev.position = *res.first_position;
    ev.effect = res.first_effect;
    ev.text = fmt::format(
        "y_{} from step() differs from forward()'s by {:.3g} (relative) with the partition '{}' (L={}, {}): the "
        "incremental path does not compute the model",
        ev.position, ev.effect, res.first_partition, opt.seq_len, res.precision);
  } else if (!res.isolation) {
    const bool fresh = decisive.fresh_state > thr;
    ev.effect = fresh ? decisive.fresh_state : decisive.forward_after;
    ev.text = fresh ? fmt::format("a second run from a fresh init_state gave outputs {:.3g} (relative) apart from the "
                                  "first ({}): the model keeps state outside the passed state (a cache in a module "
                                  "attribute)",
                                  ev.effect, res.precision)
                    : fmt::format("forward after the steps moved by {:.3g} (relative) from forward before them ({}): "
                                  "step changes what forward computes",
                                  ev.effect, res.precision);
  }
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return res;
}

nlohmann::json to_json(const IncrementalResult& inc) {
  nlohmann::json parts = nlohmann::json::array();
  for (const auto& p : inc.partitions) parts.push_back({{"name", p.name}, {"sizes", p.sizes}});
  nlohmann::json first = nullptr;
  if (inc.first_position)
    first = {{"position", *inc.first_position}, {"partition", inc.first_partition}, {"effect", inc.first_effect}};
  nlohmann::json floor = nullptr;
  if (inc.precision_floor && inc.precision_floor->measured)
    floor = {{"value", inc.precision_floor->value}, {"float32_sized", inc.precision_floor->float32_sized}};
  return {{"consistent", inc.consistent},
          {"partitions", parts},
          {"first_inconsistent", first},
          {"effect", inc.max_effect},
          {"effect_own_dtype", inc.max_effect_own ? nlohmann::json(*inc.max_effect_own) : nlohmann::json(nullptr)},
          {"precision", inc.precision},
          {"threshold", inc.threshold},
          {"precision_floor", floor},
          {"isolation",
           {{"holds", inc.isolation},
            {"fresh_state_effect", inc.fresh_state_effect},
            {"forward_after_steps_effect", inc.forward_after_steps_effect}}},
          {"holds", inc.holds()},
          {"text", inc.evidence.text},
          {"seconds", inc.seconds}};
}

void attach_incremental(const IncrementalResult& inc, AuditResult& r) {
  r.incremental = std::make_shared<const IncrementalResult>(inc);
  for (const auto& n : inc.notes)
    if (std::find(r.notes.begin(), r.notes.end(), n) == r.notes.end()) r.notes.push_back(n);
  if (inc.holds()) {
    r.notes.push_back(fmt::format("incremental path consistent with forward over {} partitions of L={}, isolated "
                                  "({}, largest difference {:.3g})",
                                  inc.partitions.size(), inc.evidence.seq_len, inc.precision, inc.max_effect));
    return;
  }
  r.violations.push_back({ViolationKind::kIncremental, 0, 0, inc.evidence});
}

}  // namespace grassaudit
