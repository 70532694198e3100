// Length independence (causality_audit.h), eval mode at the main length: y_t from a prefix
// x_0..x_{p-1} alone must equal y_t from the full sequence for t < p - guard, guard =
// max(lookahead, future horizon): what the future dependence explains is not a length effect.
#include "audit/checks/length_check.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "audit/checks/check.h"
#include "audit/checks/check_outputs.h"
#include "audit/checks/decide.h"
#include "audit/checks/json_fields.h"

namespace grassaudit {

std::vector<int64_t> prefix_schedule(int64_t L, int64_t shortest) {
  std::vector<int64_t> out;
  const int64_t lo = std::max<int64_t>(2, shortest), hi = L - 1, n = hi - lo + 1;
  if (n <= 0) return out;
  constexpr int64_t kMax = 32;
  if (n <= kMax) {
    for (int64_t p = lo; p <= hi; ++p) out.push_back(p);
    return out;
  }
  for (int64_t i = 0; i < kMax; ++i) {
    const int64_t p = lo + (i * (n - 1)) / (kMax - 1);
    if (out.empty() || out.back() != p) out.push_back(p);
  }
  return out;
}

namespace {

class LengthCheck : public Check {
 public:
  const char* name() const override { return "length"; }
  bool wanted(const AuditRun& run) const override { return run.opt.length_check && !run.settled(); }

  // Sets r.length_dependent / r.length_evidence (nullopt when nothing could be compared).
  void run(AuditRun& run) override {
    AuditResult& r = run.r;
    const FutureHorizon* future = run.outputs.get<FutureHorizon>();
    const int64_t L = run.L, guard = std::max(run.opt.lookahead, future ? future->horizon : 0);
    const auto prefixes = prefix_schedule(L, run.opt.min_seq_len);
    if (prefixes.empty() && run.opt.min_seq_len > 2) {
      r.notes.push_back(fmt::format("length check not run: the model runs at no length from {} to {} (the shortest it "
                                    "declares is {}), so no prefix of L={} can run alone",
                                    2, L - 1, run.opt.min_seq_len, L));
      return;
    }
    std::vector<int64_t> lens;
    for (int64_t p : prefixes)
      if (p - guard > 0) lens.push_back(p);
    if (lens.empty()) {
      r.notes.push_back(fmt::format("length check skipped: with a future horizon / lookahead of {} no prefix of L={} "
                                    "has a position unaffected by what follows it",
                                    guard, L));
      return;
    }
    // A prefix run alone and the full run differ in shape, so in float32 they round differently
    // by whatever the BLAS kernels and the thread split do with each shape: whether a float32
    // screen of them moves depends on the CPU and the thread count, not on the model, so it
    // cannot decide. The prefix runs go to float64 directly (the own dtype only where float64 is
    // unavailable, judged against its float32 threshold).
    const auto d = decide_direct<std::vector<PrefixEffect>>(
        run.prec, ThresholdKind::kComparison,
        [&](const InPrecision& in, double) { return run.prober.prefix_effects(in, L, lens, guard); });
    const std::vector<PrefixEffect>& measured = d.value;
    std::vector<int64_t> failed;
    std::string first_error;
    for (const auto& pe : measured)
      if (!pe.error.empty()) {
        failed.push_back(pe.prefix_len);
        if (first_error.empty()) first_error = pe.error;
      }
    if (!failed.empty())
      r.notes.push_back(fmt::format("length check: the model does not run at prefix length(s) {} ({}); those were "
                                    "skipped",
                                    fmt::join(failed, ","), first_error));
    if (failed.size() == measured.size()) return;  // nothing compared: not checked
    r.length_dependent = false;
    for (const auto& pe : d.value)
      if (pe.error.empty()) r.length_profile.emplace_back(pe.prefix_len, pe.effect);
    const PrefixEffect* worst = nullptr;
    for (const auto& pe : d.value)
      if (pe.error.empty() && pe.effect > d.threshold && (!worst || pe.effect > worst->effect)) worst = &pe;
    if (!worst) return;
    r.length_dependent = true;
    Evidence& ev = r.length_evidence;
    ev.mode = "eval";
    ev.seq_len = L;
    ev.prefix_len = worst->prefix_len;
    ev.position = worst->position;
    ev.effect = worst->effect;
    ev.precision = decided_in(run.prec, d.float64);
    ev.text = fmt::format(
        "y_{} from the prefix of length {} alone differs by {:.3g} (relative) from y_{} of the full length {} ({}): "
        "outputs depend on how many inputs follow",
        worst->position, worst->prefix_len, worst->effect, worst->position, L, ev.precision);
  }

  void judge(const AuditRun& run, std::vector<Violation>& out) const override {
    if (run.r.length_dependent.value_or(false)) out.push_back({ViolationKind::kLength, 0, 0, run.r.length_evidence});
  }

  void write_json(const AuditResult& r, nlohmann::json& j) const override {
    j["length_dependent"] = opt_json(r.length_dependent);
    j["length_evidence"] = evidence_json(r.length_evidence);
    nlohmann::json profile = nlohmann::json::array();
    for (const auto& [p, e] : r.length_profile) profile.push_back({p, e});
    j["length_profile"] = r.length_profile.empty() ? nlohmann::json(nullptr) : profile;
  }
  void write_output_json(const AuditResult& r, nlohmann::json& j) const override {
    j["length_dependent"] = opt_json(r.length_dependent);
  }
  std::vector<std::string> thread_dependent() const override { return {"length_evidence.effect", "length_profile"}; }
  std::string status(const AuditResult& r) const override {
    return std::string("length-dependent: ") +
           (r.length_dependent ? (*r.length_dependent ? "yes" : "no") : "not checked");
  }

  std::string headline(const Violation& v, const AuditResult&) const override {
    if (v.kind != ViolationKind::kLength) return "";
    const Evidence& e = v.evidence;
    return fmt::format("LENGTH-DEPENDENT (y_{} of a prefix of length {} differs by {:.3g})", e.position, e.prefix_len,
                       e.effect);
  }

  std::vector<Expectation> expectations() const override {
    return {{"length_dependent", [](const AuditResult& r) { return opt_json(r.length_dependent); }}};
  }
};

}  // namespace

std::unique_ptr<Check> make_length_check() { return std::make_unique<LengthCheck>(); }

}  // namespace grassaudit
