#include "report/audit_page.h"

#include <fmt/format.h>

#include "report/figures/figures.h"
#include "report/figures/leak_map_figure.h"

namespace grassaudit {
namespace {

std::string number(const nlohmann::json& v) {
  if (v.is_number_integer()) return std::to_string(v.get<long long>());
  if (v.is_number()) return fmt::format("{:.3g}", v.get<double>());
  if (v.is_boolean()) return v.get<bool>() ? "yes" : "no";
  if (v.is_null()) return "not checked";
  return v.is_string() ? v.get<std::string>() : v.dump();
}

// A Markdown table cell: no pipe, no line break.
std::string cell(std::string s) {
  for (auto& c : s)
    if (c == '|' || c == '\n') c = ' ';
  return s;
}

}  // namespace

std::map<std::string, std::string> audit_page(const nlohmann::json& a, const std::string& summary,
                                              const std::string& gnuplot) {
  std::map<std::string, std::string> files;
  const std::string verdict = a.value("verdict", std::string("?"));
  std::string md = fmt::format("# Audit: {}\n\n", a.value("target", std::string("model")));
  md += fmt::format("**{}**: leak horizon {}, max effect {}, decided in {} (threshold {}); the contract {}.\n\n",
                    verdict == "leaky" ? "LEAKY" : verdict, number(a.value("leak_horizon", nlohmann::json())),
                    number(a.value("max_effect", nlohmann::json())), a.value("precision", std::string("?")),
                    number(a.value("threshold", nlohmann::json())),
                    a.value("contract_holds", false) ? "holds" : "is VIOLATED");
  const auto lm = a.find("leak_map");
  if (lm != a.end() && lm->is_object() && lm->value("seq_len", 0) >= 2) {
    FigurePlan plan;
    plan_leak_map(leak_map_picture_of_audit(a, "leakmap"), plan);
    for (auto& [name, bytes] : draw_pictures(plan, gnuplot)) files[name] = std::move(bytes);
    md += "![leak map](leakmap.svg)\n\n" + plan.figures.front().caption + "\n\n";
  }
  const auto& contract = a.value("contract", nlohmann::json::object());
  md += "## The contract\n\n";
  const long long lookahead = contract.value("lookahead", 0LL);
  md += fmt::format("y_t may read {} and {}.\n\n",
                    lookahead > 0 ? fmt::format("x_(t+1) .. x_(t+{}) ahead (lookahead {})", lookahead, lookahead)
                                  : std::string("no input after x_t (strictly causal)"),
                    contract.value("window", nlohmann::json()).is_null()
                        ? std::string("the whole past")
                        : fmt::format("nothing before x_(t-{}+1) (window {})", number(contract["window"]),
                                      number(contract["window"])));
  md += "## Checks\n\n| check | result | seconds | forward-equivalents |\n|---|---|---|---|\n";
  const auto& seconds = a.value("seconds_by_check", nlohmann::json::object());
  const auto forwards = a.value("forwards", nlohmann::json::object()).value("by_check", nlohmann::json::object());
  auto result_of = [&](const std::string& check) -> std::string {
    if (check == "future") return fmt::format("{} (horizon {})", verdict, number(a.value("leak_horizon", nlohmann::json())));
    if (check == "length") return "length-dependent: " + number(a.value("length_dependent", nlohmann::json()));
    if (check == "batch") return "batch-coupled: " + number(a.value("batch_coupled", nlohmann::json()));
    if (check == "past") return "past horizon " + number(a.value("past_horizon", nlohmann::json()));
    if (check == "precision_floor" && a.value("precision_floor", nlohmann::json()).is_object())
      return "floor " + number(a["precision_floor"].value("value", nlohmann::json()));
    return "";
  };
  for (const auto& [check, s] : seconds.items()) {
    const auto f = forwards.value(check, nlohmann::json::object());
    md += fmt::format("| {} | {} | {:.2f} | {} |\n", check, cell(result_of(check)), s.get<double>(),
                      f.contains("forward_equivalents") ? fmt::format("{:.1f}", f["forward_equivalents"].get<double>())
                                                        : std::string("-"));
  }
  md += "\n## Evidence\n\n";
  const auto& violations = a.value("violations", nlohmann::json::array());
  if (violations.empty()) {
    md += "No violation: every property held within the contract.\n";
  } else {
    md += "| property | evidence |\n|---|---|\n";
    for (const auto& v : violations)
      md += fmt::format("| {} | {} |\n", v.value("kind", std::string("?")),
                        cell(v.value("evidence", nlohmann::json::object()).value("text", std::string())));
  }
  const auto sites = a.find("leak_sites");
  if (sites != a.end() && sites->is_array() && !sites->empty()) {
    // The smallest units that read their own inputs' future (the localise check).
    md += "\n## Where the leak enters\n\n| unit | what | own horizon | mode |\n|---|---|---|---|\n";
    for (const auto& s : *sites) {
      const std::string path = s.value("path", std::string());
      std::string what = s.value("source", s.value("op", std::string()));
      if (s.contains("node")) what += (what.empty() ? "" : ", ") + std::string("node ") + s.value("node", std::string());
      md += fmt::format("| {} | {} | {} | {} |\n", path.empty() ? "the model's own forward" : "`" + cell(path) + "`",
                        cell(what), number(s.value("horizon", nlohmann::json())), s.value("mode", std::string()));
    }
  }
  md += "\n## Summary\n\n```text\n" + summary + "```\n";
  files["README.md"] = md;
  return files;
}

}  // namespace grassaudit
