#include "audit/output_audit.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "util/error.h"

namespace grassaudit {
namespace {

std::string leaf_list(const std::vector<OutputLeaf>& leaves) {
  std::vector<std::string> parts;
  for (const auto& l : leaves)
    parts.push_back(fmt::format("{} [{}]{}", l.path.empty() ? "(output)" : l.path, fmt::join(l.shape, ", "),
                                l.skipped.empty() ? "" : " (skipped: " + l.skipped + ")"));
  return fmt::format("{}", fmt::join(parts, "; "));
}

// Is a worse than b? Leaky first, then the larger horizon, then the larger effect.
bool worse(const AuditResult& a, const AuditResult& b) {
  if (a.leaky() != b.leaky()) return a.leaky();
  if (a.leak_horizon != b.leak_horizon) return a.leak_horizon > b.leak_horizon;
  return a.max_effect > b.max_effect;
}

}  // namespace

AuditOptions file_audit_options(ModelFileTarget& target, const AuditOptions& given) {
  AuditOptions options = given;
  const DeclaredRange range = target.seq_len_range();
  if (range.any()) return options;
  if (range.is_static()) {
    if (options.seq_len != range.lo)
      throw InputError(fmt::format("{}: runs at length {} only (its sequence length is fixed in the file), not {}: audit "
                                   "it with --seq-len {}, or save it with a dynamic sequence dimension",
                                   target.describe(), range.lo, options.seq_len, range.lo));
    for (int64_t l : options.seq_lens)
      if (l != range.lo)
        throw InputError(fmt::format("{}: runs at length {} only (its sequence length is fixed in the file), not {}",
                                     target.describe(), range.lo, l));
    options.seq_lens = {range.lo};
    options.min_seq_len = range.lo;
    options.lengths_why = fmt::format("the file runs at length {} only (its sequence length is fixed in the file): the "
                                      "other lengths of the schedule{} are not run",
                                      range.lo, options.length_check ? " and the length check" : "");
    options.length_check = false;
    return options;
  }
  auto outside = [&](int64_t l, const char* flag) {
    return InputError(fmt::format("{}: {} {} is outside the sequence lengths the file was exported for, {} (its range "
                                  "constraints): audit it at a length in that range, or export it with a wider "
                                  "dynamic sequence dimension",
                                  target.describe(), flag, l, range.str()));
  };
  if (!range.contains(options.seq_len)) throw outside(options.seq_len, "--seq-len");
  for (int64_t l : options.seq_lens)
    if (!range.contains(l)) throw outside(l, "--seq-lens entry");
  options.min_seq_len = std::max(options.min_seq_len, range.lo);
  if (!options.seq_lens.empty()) return options;  // the lengths asked for, every one inside
  std::vector<int64_t> kept, dropped;
  for (int64_t l : audit_length_schedule(options.seq_len)) (range.contains(l) ? kept : dropped).push_back(l);
  if (dropped.empty()) return options;
  options.seq_lens = kept;
  options.lengths_why = fmt::format("the file runs at sequence lengths {} only (its range constraints): the schedule's "
                                    "{} {} not run{}",
                                    range.str(), fmt::join(dropped, ", "), dropped.size() == 1 ? "is" : "are",
                                    range.lo > 2 ? fmt::format(", nor prefixes shorter than {}", range.lo) : "");
  return options;
}

AuditResult run_output_audits(ModelFileTarget& target, const AuditOptions& given,
                              const std::optional<std::string>& only) {
  if (only) validate_output_path(*only);
  std::vector<std::string> file_notes = target.notes();
  const AuditOptions options = file_audit_options(target, given);
  auto finish = [&](AuditResult r) {
    r.format = target.format();
    r.notes.insert(r.notes.end(), file_notes.begin(), file_notes.end());
    return r;
  };
  auto leaves = target.output_leaves(options.seq_len);
  const std::string what = target.describe();
  // A leaf has the time axis when its dimension K is L and follows L: a [B, D] leaf with D = L
  // by chance is told apart at a second length of the schedule (when the model runs there).
  const auto schedule = options.seq_lens.empty() ? audit_length_schedule(options.seq_len) : options.seq_lens;
  const auto second = std::find_if(schedule.begin(), schedule.end(), [&](int64_t l) { return l != options.seq_len; });
  if (leaves.size() > 1 && second != schedule.end()) {
    std::vector<OutputLeaf> other;
    try {
      other = target.output_leaves(*second);
    } catch (const InputError&) {
      other.clear();  // the model runs at one length only (traced): the main length decides
    }
    if (other.size() == leaves.size())
      for (size_t i = 0; i < leaves.size(); ++i)
        if (leaves[i].skipped.empty() && !other[i].skipped.empty())
          leaves[i].skipped = fmt::format("dimension {} does not follow the length (at L {}: {})",
                                          target.signature().time_axis(), *second, other[i].skipped);
  }
  std::vector<const OutputLeaf*> audited;
  for (const auto& l : leaves)
    if (l.skipped.empty() && (!only || l.path == *only)) audited.push_back(&l);
  if (only && audited.empty()) {
    for (const auto& l : leaves)
      if (l.path == *only)
        throw InputError(fmt::format("{}: --output {}: that leaf is not audited: {}", what, *only, l.skipped));
    throw InputError(fmt::format("{}: --output {} names no leaf of the output; its leaves: {}", what, *only, leaf_list(leaves)));
  }
  if (audited.empty())
    throw InputError(fmt::format("{}: no output leaf has the time axis (a floating-point tensor [B, ...] with L = {} at "
                                 "dimension {}); its leaves: {}",
                                 what, options.seq_len, target.signature().time_axis(), leaf_list(leaves)));
  // One output, the output itself: the plain audit.
  if (leaves.size() == 1 && leaves[0].path.empty()) {
    target.select_output("");
    auto r = run_causality_audit(target, options);
    r.output_shape = leaves[0].shape;
    return finish(std::move(r));
  }
  std::vector<AuditResult> results;
  size_t worst = 0;
  for (const auto* l : audited) {
    target.select_output(l->path);
    results.push_back(run_causality_audit(target, options));
    if (worse(results.back(), results[worst])) worst = results.size() - 1;
  }
  AuditResult top = results[worst];
  top.worst_output = audited[worst]->path;
  double seconds = 0;
  int64_t probes = 0;
  top.seconds_by_check.clear();  // the cost of every leaf, check by check
  top.forwards_by_check.clear();
  top.forwards = {};
  for (const auto& r : results) {
    seconds += r.seconds, probes += r.probes;
    add_costs(top, r);
  }
  size_t k = 0;
  for (const auto& l : leaves) {
    if (!l.skipped.empty() || (only && l.path != *only)) {
      OutputResult o;
      o.path = l.path;
      o.shape = l.shape;
      o.skipped = l.skipped.empty() ? "not selected (--output)" : l.skipped;
      top.outputs.push_back(o);
      continue;
    }
    top.outputs.push_back(output_result(results[k], l.path, l.shape));
    ++k;
  }
  top.seconds = seconds;  // the whole audit: every leaf
  top.probes = probes;
  target.select_output(top.worst_output);
  return finish(std::move(top));
}

}  // namespace grassaudit
