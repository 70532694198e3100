#include "audit/audit_suite.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <torch/version.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>

#include "audit/audit_refusal.h"
#include "audit/incremental_audit.h"
#include "audit/output_audit.h"
#include "audit/model_file.h"
#include "util/atomic_file.h"
#include "util/error.h"

namespace grassaudit {

std::vector<SuiteCaseResult> run_audit_suite(const std::string& suite_path, const AuditOptions& base) {
  nlohmann::json suite;
  try {
    suite = nlohmann::json::parse(read_file(suite_path));
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("{}: not valid JSON ({})", suite_path, e.what()));
  }
  if (!suite.contains("cases") || !suite["cases"].is_array() || suite["cases"].empty())
    throw InputError(fmt::format("{}: suite has no \"cases\" array", suite_path));
  auto dir = std::filesystem::path(suite_path).parent_path();
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
    SuiteCaseResult res;
    AuditOptions opt = base;
    std::string model_path;
    std::vector<InputBinding> inputs;
    StreamingOptions streaming;
    int64_t time_axis = 1;
    std::optional<std::string> output;
    std::optional<bool> expect_rounding, expect_length, expect_batch, expect_f32_floor, expect_inc_consistent,
        expect_inc_isolation, expect_train_from_eval, expect_decaying;
    bool incremental = false;
    std::optional<int64_t> expect_past, expect_structural_horizon;
    int64_t horizon_within = 0;
    std::optional<std::vector<ViolationKind>> expect_violations;
    std::optional<std::string> refused, expect_gradient, expect_structural;
    try {
      res.name = c.at("name").get<std::string>();
      model_path = (dir / c.at("model").get<std::string>()).string();
      // "input": one value, or "inputs": one per forward argument (audit/model_signature.h).
      if (c.contains("inputs"))
        for (const auto& text : c["inputs"]) inputs.push_back(InputBinding::parse(text.get<std::string>()));
      else
        inputs.push_back(InputBinding::parse(c.at("input").get<std::string>()));
      time_axis = c.value("time_axis", int64_t{1});
      // "state": ["IN=OUT", ...] runs a streaming ONNX step chunk by chunk (audit --state).
      if (c.contains("state"))
        for (const auto& text : c["state"]) streaming.state.push_back(StreamingOptions::parse_pair(text.get<std::string>()));
      incremental = c.value("incremental", false);  // also audit init_state/step (audit/incremental_audit.h)
      opt.gradient_check = c.value("gradient_check", base.gradient_check);  // false: --no-gradient-check
      opt.structural = !c.value("weights_as_given", !base.structural);       // true: --weights-as-given
      if (c.contains("output")) output = c["output"].get<std::string>();
      opt.seq_len = c.at("seq_len").get<int64_t>();
      // A traced file runs at its traced length only: its case lists the lengths to audit.
      if (c.contains("seq_lens")) opt.seq_lens = c["seq_lens"].get<std::vector<int64_t>>();
      std::string mode = c.value("mode", std::string("both"));
      if (mode != "eval" && mode != "train" && mode != "both")
        throw InputError(fmt::format("case {}: mode must be eval, train or both", res.name));
      opt.eval_mode = mode != "train";
      opt.train_mode = mode != "eval";
      const auto& e = c.at("expect");
      if (e.contains("refused")) {  // the audit must refuse the model (exit 2), for this reason
        refused = e["refused"].get<std::string>();
        if (*refused != "state" && *refused != "nondeterministic" && *refused != "incremental")
          throw InputError(
              fmt::format("case {}: expect.refused must be state, nondeterministic or incremental", res.name));
        res.expected_verdict = "refused:" + *refused;
      } else {
        res.expected_verdict = verdict_name(parse_verdict(e.at("verdict").get<std::string>()));
        res.expected_horizon = e.at("leak_horizon").get<int64_t>();
      }
      if (e.contains("rounding_only")) expect_rounding = e["rounding_only"].get<bool>();
      if (e.contains("length_dependent")) expect_length = e["length_dependent"].get<bool>();
      if (e.contains("batch_coupled")) expect_batch = e["batch_coupled"].get<bool>();
      if (e.contains("incremental_consistent")) expect_inc_consistent = e["incremental_consistent"].get<bool>();
      if (e.contains("incremental_isolation")) expect_inc_isolation = e["incremental_isolation"].get<bool>();
      if (e.contains("train_from_eval")) expect_train_from_eval = e["train_from_eval"].get<bool>();
      if (e.contains("float32_sized_floor")) expect_f32_floor = e["float32_sized_floor"].get<bool>();
      if (e.contains("past_horizon")) expect_past = e["past_horizon"].get<int64_t>();
      // A dependence that decays crosses the threshold where the probe's random inputs put it: a
      // distance or two either way of the brute force's crossing.
      horizon_within = e.value("leak_horizon_within", int64_t{0});
      if (e.contains("decaying")) expect_decaying = e["decaying"].get<bool>();
      if (e.contains("structural_horizon")) expect_structural_horizon = e["structural_horizon"].get<int64_t>();
      if (e.contains("gradient_check")) {
        expect_gradient = e["gradient_check"].get<std::string>();
        if (*expect_gradient != "agrees" && *expect_gradient != "disagrees" && *expect_gradient != "not run" &&
            *expect_gradient != "off")
          throw InputError(fmt::format("case {}: expect.gradient_check must be agrees, disagrees, not run or off",
                                       res.name));
      }
      if (e.contains("structural")) {
        expect_structural = e["structural"].get<std::string>();
        if (*expect_structural != "leaky" && *expect_structural != "causal" && *expect_structural != "none")
          throw InputError(fmt::format("case {}: expect.structural must be leaky, causal or none", res.name));
      }
      if (e.contains("violations")) {
        expect_violations.emplace();
        for (const auto& k : e["violations"]) expect_violations->push_back(parse_violation_kind(k.get<std::string>()));
      }
      if (c.contains("contract")) {
        const auto& k = c["contract"];
        for (const auto& [key, value] : k.items())
          if (key != "lookahead" && key != "window")
            throw InputError(fmt::format("case {}: unknown contract key '{}' (lookahead, window)", res.name, key));
        opt.lookahead = k.value("lookahead", int64_t{0});
        if (k.contains("window")) opt.window = k["window"].get<int64_t>();
      }
    } catch (const nlohmann::json::exception& e) {
      throw InputError(fmt::format("{}: malformed case {}: {}", suite_path, res.name.empty() ? "?" : res.name, e.what()));
    }
    const std::unique_ptr<ModelFileTarget> opened = open_model_file(model_path, inputs, time_axis, 1.0, streaming);
    ModelFileTarget& target = *opened;
    if (refused) {
      // The audit's refusal carries its reason (checked before any probe, as the CLI does).
      try {
        if (incremental) require_incremental(target);
        run_output_audits(target, opt, output);
        res.verdict = "audited";
        res.detail = fmt::format("expected the audit to refuse it ({}), but it gave a verdict", *refused);
      } catch (const AuditRefusal& err) {
        res.facts_json = err.what();
        res.verdict = std::string("refused:") + refusal_name(err.reason());
        res.pass = res.verdict == res.expected_verdict;
        if (!res.pass) res.detail = "refused for another reason: " + std::string(err.what());
      } catch (const InputError& err) {
        res.facts_json = err.what();
        res.verdict = "refused:other";
        res.detail = "refused for another reason: " + std::string(err.what());
      }
      out.push_back(res);
      continue;
    }
    auto r = run_output_audits(target, opt, output);
    std::optional<IncrementalResult> inc;
    if (incremental) {
      target.select_output(output.value_or(""));
      inc = audit_incremental(target, opt, r);
    }
    res.facts_json = to_json(r).dump();
    res.train_from_eval = r.train_from_eval;
    res.verdict = verdict_name(r.verdict);
    res.horizon = r.leak_horizon;
    res.rounding_only = r.rounding_only;
    res.seconds = r.seconds;
    std::vector<ViolationKind> kinds;
    for (const auto& v : r.violations) kinds.push_back(v.kind);
    std::vector<std::string> off;  // what differs from the expectation
    if (res.verdict != res.expected_verdict || std::abs(res.horizon - res.expected_horizon) > horizon_within)
      off.push_back(fmt::format("expected {} horizon {}, got {} horizon {}", res.expected_verdict, res.expected_horizon,
                                res.verdict, r.leak_horizon));
    if (expect_rounding && same_kernels && *expect_rounding != r.rounding_only)
      off.push_back(fmt::format("rounding_only {} != {}", r.rounding_only, *expect_rounding));
    if (expect_length && r.length_dependent != expect_length)
      off.push_back(fmt::format("length_dependent {} != {}", r.length_dependent.value_or(false), *expect_length));
    if (expect_batch && r.batch_coupled != expect_batch)
      off.push_back(fmt::format("batch_coupled {} != {}", r.batch_coupled.value_or(false), *expect_batch));
    if (expect_decaying && r.decaying != expect_decaying)
      off.push_back(fmt::format("decaying {} != {}", r.decaying ? (*r.decaying ? "true" : "false") : "null",
                                *expect_decaying));
    if (expect_structural_horizon && r.structural_horizon != expect_structural_horizon)
      off.push_back(fmt::format("structural_horizon {} != {}",
                                r.structural_horizon ? std::to_string(*r.structural_horizon) : "null",
                                *expect_structural_horizon));
    if (expect_past && r.past_horizon != expect_past)
      off.push_back(fmt::format("past_horizon {} != {}", r.past_horizon.value_or(-1), *expect_past));
    if (expect_inc_consistent && inc && inc->consistent != *expect_inc_consistent)
      off.push_back(fmt::format("incremental consistent {} != {}", inc->consistent, *expect_inc_consistent));
    if (expect_inc_isolation && inc && inc->isolation != *expect_inc_isolation)
      off.push_back(fmt::format("incremental isolation {} != {}", inc->isolation, *expect_inc_isolation));
    const bool f32_floor = r.precision_floor && r.precision_floor->float32_sized;
    if (expect_f32_floor && f32_floor != *expect_f32_floor)
      off.push_back(fmt::format("float32_sized_floor {} != {}", f32_floor, *expect_f32_floor));
    // The proof itself (used or not: --no-train-proof probes train mode anyway).
    const bool proven = r.train_mode_proof && r.train_mode_proof->proven;
    if (expect_train_from_eval && proven != *expect_train_from_eval)
      off.push_back(fmt::format("train-mode proof {} != {}", proven, *expect_train_from_eval));
    if (expect_gradient) {
      const std::string got = r.gradient.ran ? (r.gradient.agrees ? "agrees" : "disagrees")
                              : r.gradient.not_run.empty() ? "off"
                                                           : "not run";
      if (got != *expect_gradient)
        off.push_back(fmt::format("gradient check {} != {}{}", got, *expect_gradient,
                                  r.gradient.not_run.empty() ? "" : " (" + r.gradient.not_run + ")"));
    }
    if (expect_structural) {
      const std::string got = r.structural && r.structural->ran ? verdict_name(r.structural->verdict) : "none";
      if (got != *expect_structural)
        off.push_back(fmt::format("structural pass {} != {}{}", got, *expect_structural,
                                  r.structural && !r.structural->not_run.empty() ? " (" + r.structural->not_run + ")"
                                                                                 : ""));
    }
    if (expect_violations && kinds != *expect_violations)
      off.push_back(fmt::format("violations [{}] != [{}]", kind_list(kinds), kind_list(*expect_violations)));
    res.pass = off.empty();
    res.detail = fmt::format("{}", fmt::join(off, "; "));
    out.push_back(res);
  }
  return out;
}

}  // namespace grassaudit
