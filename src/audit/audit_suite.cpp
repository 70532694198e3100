#include "audit/audit_suite.h"

#include <fmt/format.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "audit/torchscript_target.h"
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
  std::vector<SuiteCaseResult> out;
  for (const auto& c : suite["cases"]) {
    SuiteCaseResult res;
    AuditOptions opt = base;
    std::string model_path;
    InputSpec input;
    std::optional<bool> expect_rounding;
    try {
      res.name = c.at("name").get<std::string>();
      model_path = (dir / c.at("model").get<std::string>()).string();
      input = InputSpec::parse(c.at("input").get<std::string>());
      opt.seq_len = c.at("seq_len").get<int64_t>();
      std::string mode = c.value("mode", std::string("both"));
      if (mode != "eval" && mode != "train" && mode != "both")
        throw InputError(fmt::format("case {}: mode must be eval, train or both", res.name));
      opt.eval_mode = mode != "train";
      opt.train_mode = mode != "eval";
      const auto& e = c.at("expect");
      res.expected_verdict = e.at("verdict").get<std::string>();
      res.expected_horizon = e.at("leak_horizon").get<int64_t>();
      if (e.contains("rounding_only")) expect_rounding = e["rounding_only"].get<bool>();
    } catch (const nlohmann::json::exception& e) {
      throw InputError(fmt::format("{}: malformed case {}: {}", suite_path, res.name.empty() ? "?" : res.name, e.what()));
    }
    TorchScriptTarget target(model_path, input);
    auto r = run_causality_audit(target, opt);
    res.verdict = r.verdict;
    res.horizon = r.leak_horizon;
    res.rounding_only = r.rounding_only;
    res.seconds = r.seconds;
    res.pass = res.verdict == res.expected_verdict && res.horizon == res.expected_horizon &&
               (!expect_rounding || *expect_rounding == r.rounding_only);
    if (!res.pass)
      res.detail = fmt::format("expected {} horizon {}{}, got {} horizon {} (rounding_only {})", res.expected_verdict,
                               res.expected_horizon,
                               expect_rounding ? fmt::format(" rounding_only {}", *expect_rounding) : "", r.verdict,
                               r.leak_horizon, r.rounding_only);
    out.push_back(res);
  }
  return out;
}

}  // namespace grassaudit
