#include "audit/audit_suite.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <torch/version.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>

#include "audit/audit_refusal.h"
#include "audit/causality_audit.h"
#include "audit/checks/check.h"
#include "audit/incremental_audit.h"
#include "audit/output_audit.h"
#include "audit/model_file_target.h"
#include "util/atomic_file.h"
#include "util/error.h"

namespace grassaudit {

namespace {
// The audit's own expectations, then each check's (audit/checks/check.h); nullptr: none has `key`.
const Expectation* expectation(const std::string& key) {
  static const std::vector<Expectation> all = [] {
    std::vector<Expectation> x{
        {"float32_sized_floor",
         [](const AuditResult& r) { return nlohmann::json(r.precision_floor && r.precision_floor->float32_sized); }},
        // The proof itself (used or not: --no-train-proof probes train mode anyway).
        {"train_from_eval",
         [](const AuditResult& r) { return nlohmann::json(r.train_mode_proof && r.train_mode_proof->proven); }},
        // The lengths audited: a file's declared range keeps some of the schedule out.
        {"seq_lens", [](const AuditResult& r) { return nlohmann::json(r.seq_lens); }},
    };
    for (const auto& check : registered_checks())
      for (auto& e : check->expectations()) x.push_back(std::move(e));
    return x;
  }();
  for (const auto& e : all)
    if (key == e.key) return &e;
  return nullptr;
}
}  // namespace

namespace {

// One case of the suite as its JSON states it: how to open and audit the model, what to expect.
struct SuiteCase {
  std::string name, model_path;
  std::vector<InputBinding> inputs;
  StreamingOptions streaming;
  int64_t time_axis = 1;
  std::optional<std::string> output;
  AuditOptions opt;
  std::optional<std::string> refused;  // the audit must refuse the model (exit 2), for this reason
  std::string expected_verdict;        // causal | leaky | refused:REASON
  int64_t expected_horizon = 0;
  // A dependence that decays crosses the threshold where the probe's random inputs put it: a
  // distance or two either way of the brute force's crossing.
  int64_t horizon_within = 0;
  std::optional<std::vector<ViolationKind>> expect_violations;
  nlohmann::json expect;  // the fields the audit's own and its checks' expectations answer
};

// The case's "expect" object into `sc`; an unknown field is an InputError.
void read_expectations(const nlohmann::json& e, SuiteCase& sc) {
  if (e.contains("refused")) {
    sc.refused = e["refused"].get<std::string>();
    if (*sc.refused != "state" && *sc.refused != "nondeterministic" && *sc.refused != "incremental")
      throw InputError(fmt::format("case {}: expect.refused must be state, nondeterministic or incremental", sc.name));
    sc.expected_verdict = "refused:" + *sc.refused;
  } else {
    sc.expected_verdict = verdict_name(parse_verdict(e.at("verdict").get<std::string>()));
    sc.expected_horizon = e.at("leak_horizon").get<int64_t>();
  }
  sc.horizon_within = e.value("leak_horizon_within", int64_t{0});
  for (const auto& [key, value] : e.items()) {
    if (key == "verdict" || key == "leak_horizon" || key == "leak_horizon_within" || key == "refused" ||
        key == "violations")
      continue;
    if (!expectation(key)) throw InputError(fmt::format("case {}: unknown expectation '{}'", sc.name, key));
    sc.expect[key] = value;
  }
  if (e.contains("violations")) {
    sc.expect_violations.emplace();
    for (const auto& k : e["violations"]) sc.expect_violations->push_back(parse_violation_kind(k.get<std::string>()));
  }
}

// One case of the suite file (paths relative to `dir`); base: the options every case shares.
SuiteCase read_case(const nlohmann::json& c, const std::filesystem::path& dir, const AuditOptions& base) {
  SuiteCase sc;
  sc.opt = base;
  sc.name = c.at("name").get<std::string>();
  sc.model_path = (dir / c.at("model").get<std::string>()).string();
  // "input": one value, or "inputs": one per forward argument (audit/model_signature.h).
  if (c.contains("inputs"))
    for (const auto& text : c["inputs"]) sc.inputs.push_back(InputBinding::parse(text.get<std::string>()));
  else
    sc.inputs.push_back(InputBinding::parse(c.at("input").get<std::string>()));
  sc.time_axis = c.value("time_axis", int64_t{1});
  // "state": ["IN=OUT", ...] runs a streaming ONNX step chunk by chunk (audit --state).
  if (c.contains("state"))
    for (const auto& text : c["state"]) sc.streaming.state.push_back(StreamingOptions::parse_pair(text.get<std::string>()));
  AuditOptions& opt = sc.opt;
  opt.incremental = c.value("incremental", false);  // also audit init_state/step (audit/incremental_audit.h)
  opt.gradient_check = c.value("gradient_check", base.gradient_check);  // false: --no-gradient-check
  opt.structural = !c.value("weights_as_given", !base.structural);       // true: --weights-as-given
  if (c.contains("output")) sc.output = c["output"].get<std::string>();
  opt.routing_budget = c.value("routing_budget", base.routing_budget);  // --routing-budget
  opt.seq_len = c.at("seq_len").get<int64_t>();
  // A traced file runs at its traced length only: its case lists the lengths to audit.
  if (c.contains("seq_lens")) opt.seq_lens = c["seq_lens"].get<std::vector<int64_t>>();
  opt.mode = c.value("mode", std::string("both"));
  if (opt.mode != "eval" && opt.mode != "train" && opt.mode != "both")
    throw InputError(fmt::format("case {}: mode must be eval, train or both", sc.name));
  read_expectations(c.at("expect"), sc);
  if (c.contains("contract")) {
    const auto& k = c["contract"];
    for (const auto& [key, value] : k.items())
      if (key != "lookahead" && key != "window")
        throw InputError(fmt::format("case {}: unknown contract key '{}' (lookahead, window)", sc.name, key));
    opt.lookahead = k.value("lookahead", int64_t{0});
    if (k.contains("window")) opt.window = k["window"].get<int64_t>();
  }
  return sc;
}

// A case the audit must refuse: its refusal carries its reason (checked before any probe, as the
// CLI does).
SuiteCaseResult run_refused_case(const SuiteCase& sc, ModelFileTarget& target) {
  SuiteCaseResult res;
  res.name = sc.name;
  res.expected_verdict = sc.expected_verdict;
  try {
    if (sc.opt.incremental) require_incremental(target);
    run_output_audits(target, sc.opt, sc.output);
    res.verdict = "audited";
    res.detail = fmt::format("expected the audit to refuse it ({}), but it gave a verdict", *sc.refused);
  } catch (const AuditRefusal& err) {
    res.refusal = err.what();
    res.verdict = std::string("refused:") + refusal_name(err.reason());
    res.pass = res.verdict == res.expected_verdict;
    if (!res.pass) res.detail = "refused for another reason: " + std::string(err.what());
  } catch (const InputError& err) {
    res.refusal = err.what();
    res.verdict = "refused:other";
    res.detail = "refused for another reason: " + std::string(err.what());
  }
  return res;
}

// A case with a verdict: the audit, then every expectation compared (`same_kernels`: the suite's
// producer has this LibTorch's float32 kernels, so kernel-dependent fields are compared too).
SuiteCaseResult run_audited_case(const SuiteCase& sc, ModelFileTarget& target, bool same_kernels) {
  SuiteCaseResult res;
  res.name = sc.name;
  res.expected_verdict = sc.expected_verdict;
  res.expected_horizon = sc.expected_horizon;
  auto r = run_output_audits(target, sc.opt, sc.output);
  run_model_checks(target, sc.opt, sc.output, r);
  res.train_from_eval = r.train_from_eval;
  res.verdict = verdict_name(r.verdict());
  res.horizon = r.leak_horizon;
  res.rounding_only = r.rounding_only();
  res.seconds = r.seconds;
  std::vector<ViolationKind> kinds;
  for (const auto& v : r.violations) kinds.push_back(v.kind);
  std::vector<std::string> off;  // what differs from the expectation
  if (res.verdict != res.expected_verdict || std::abs(res.horizon - res.expected_horizon) > sc.horizon_within)
    off.push_back(fmt::format("expected {} horizon {}, got {} horizon {}", res.expected_verdict, res.expected_horizon,
                              res.verdict, r.leak_horizon));
  for (const auto& [key, want] : sc.expect.items()) {
    const Expectation& x = *expectation(key);
    if (x.kernel_dependent && !same_kernels) continue;
    const nlohmann::json got = x.got(r);
    if (got != want) off.push_back(fmt::format("{} {} != {}", key, got.dump(), want.dump()));
  }
  if (sc.expect_violations && kinds != *sc.expect_violations)
    off.push_back(fmt::format("violations [{}] != [{}]", kind_list(kinds), kind_list(*sc.expect_violations)));
  res.pass = off.empty();
  res.detail = fmt::format("{}", fmt::join(off, "; "));
  res.result = std::move(r);
  return res;
}

}  // namespace

std::vector<SuiteCaseResult> run_audit_suite(const std::string& suite_path, const AuditOptions& base,
                                             const ModelFileOpener& open) {
  nlohmann::json suite;
  try {
    suite = nlohmann::json::parse(read_file(suite_path));
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("{}: not valid JSON ({})", suite_path, e.what()));
  }
  if (!suite.contains("cases") || !suite["cases"].is_array() || suite["cases"].empty())
    throw InputError(fmt::format("{}: suite has no \"cases\" array", suite_path));
  const auto dir = std::filesystem::path(suite_path).parent_path();
  // rounding_only says whether float32 showed exact zeros: a fact about the float32 kernels of the
  // PyTorch that made the suite ("producer"), not about the model (LibTorch 2.6's conv and matmul
  // kernels leave float32 cross-talk where 1.13's are bit-exact, and the reverse can happen). It
  // is compared on that major.minor only; verdicts, horizons and every other property everywhere.
  const auto major_minor = [](const std::string& v) {
    std::smatch m;
    return std::regex_search(v, m, std::regex(R"((\d+)\.(\d+))")) ? m[1].str() + "." + m[2].str() : std::string();
  };
  const std::string producer = major_minor(suite.value("producer", std::string()));
  const bool same_kernels = producer.empty() || producer == major_minor(TORCH_VERSION);
  std::vector<SuiteCaseResult> out;
  for (const auto& c : suite["cases"]) {
    SuiteCase sc;
    try {
      sc = read_case(c, dir, base);
    } catch (const nlohmann::json::exception& e) {
      const std::string name = c.is_object() && c.contains("name") && c["name"].is_string() ? c["name"].get<std::string>() : "?";
      throw InputError(fmt::format("{}: malformed case {}: {}", suite_path, name, e.what()));
    }
    const std::unique_ptr<ModelFileTarget> target = open(sc.model_path, sc.inputs, sc.time_axis, 1.0, sc.streaming);
    place_on_device(*target, base.device);
    out.push_back(sc.refused ? run_refused_case(sc, *target) : run_audited_case(sc, *target, same_kernels));
  }
  return out;
}

}  // namespace grassaudit
