#include "report/headline.h"

#include <algorithm>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "report/format.h"
#include "util/error.h"

namespace grassaudit {
namespace {

std::string mixer_name(const RunRecord& r) {
  if (r.family == MixerFamily::kAttention) return "attention";
  if (r.pairing == MixerPairing::kFuture) return "future (paper-literal)";
  return "past (Grassmann, causal reading)";
}

std::string headline_ppl_cell(const RunRecord& r, const std::optional<double>& valid, const std::optional<double>& quarantined) {
  if (standing_of(r) == Standing::kQuarantined && quarantined) return quarantined_cell(*quarantined, r.audit.leak_horizon);
  return valid ? fmt_ppl(*valid) : "-";
}

}  // namespace

std::string render_headline(const std::vector<RunRecord>& runs) {
  // The setting: tokenizer, length, depth, width, norm; the largest by parameters.
  using Setting = std::tuple<std::string, long long, long long, long long, std::string>;
  std::map<Setting, std::vector<const RunRecord*>> by_setting;
  for (const auto& r : runs) {
    if (r.task != "lm" || !r.family || r.audit.verdict.empty() || !r.tokens_seen) continue;
    by_setting[{r.tokenizer, r.seq_len.value_or(0), r.layers.value_or(0), r.d_model.value_or(0), r.norm}].push_back(&r);
  }
  const std::vector<const RunRecord*>* largest = nullptr;
  double most = -1;
  for (const auto& [setting, list] : by_setting) {
    double params = 0;
    for (const auto* r : list) params = std::max(params, r->params.value_or(0));
    if (params > most) most = params, largest = &list;
  }
  if (!largest) return "";
  std::map<std::string, const RunRecord*> longest;  // mixer -> its run with the most tokens seen
  for (const auto* r : *largest) {
    const RunRecord*& best = longest[mixer_name(*r)];
    if (!best || *r->tokens_seen > *best->tokens_seen || (*r->tokens_seen == *best->tokens_seen && r->name < best->name))
      best = r;
  }
  const RunRecord& any = *largest->front();
  MdTable t;
  t.header = {"mixer", "audit", "best valid ppl", "test ppl", "trained", "run"};
  for (const char* m : {"attention", "past (Grassmann, causal reading)", "future (paper-literal)"}) {
    auto it = longest.find(m);
    if (it == longest.end()) continue;
    const RunRecord& r = *it->second;
    const std::string audit = standing_of(r) == Standing::kQuarantined
                                  ? fmt::format("**LEAKY, horizon {}**", or_dash(r.audit.leak_horizon))
                                  : r.audit.verdict;
    t.rows.push_back({m, audit, headline_ppl_cell(r, r.best_valid_ppl, r.quarantined_best_valid_ppl),
                      headline_ppl_cell(r, r.test_ppl, r.quarantined_test_ppl),
                      fmt::format("{} ep ({} tokens)", fmt_epochs(r.epochs.value_or(0)), fmt_count(*r.tokens_seen)),
                      "`" + r.name + "`"});
  }
  std::string out = std::string(kHeadlineBegin) + "\n";
  out += fmt::format("The longest run of each mixer at the largest setting trained ({} layers, d_model {}, L {}, {} "
                     "tokenizer, WikiText-2; seed and epochs as each run's name and row say):\n\n",
                     or_dash(any.layers), or_dash(any.d_model), or_dash(any.seq_len), any.tokenizer);
  out += t.render();
  out += std::string(kHeadlineEnd) + "\n";
  return out;
}

std::string headline_block(const std::string& markdown) {
  const auto b = markdown.find(kHeadlineBegin);
  if (b == std::string::npos) return "";
  const auto e = markdown.find(kHeadlineEnd, b);
  if (e == std::string::npos) return "";
  const auto end = markdown.find('\n', e);
  return markdown.substr(b, (end == std::string::npos ? markdown.size() : end + 1) - b);
}

std::string with_headline(const std::string& page, const std::string& block) {
  const std::string old = headline_block(page);
  if (old.empty())
    throw InputError(std::string("the page has no headline block (") + kHeadlineBegin + " ... " + kHeadlineEnd + ")");
  std::string out = page;
  return out.replace(page.find(old), old.size(), block);
}

}  // namespace grassaudit
