#include "report/figure_plan.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "report/best_epoch.h"
#include "report/format.h"
#include "report/figures/gnuplot_script.h"
#include "report/figures/leak_map_figure.h"
#include "report/limitations.h"
#include "report/seed_groups.h"

namespace grassaudit {
namespace {

std::string q(const std::string& s) { return gnuplot_quote(s); }

// Ends `body` (its settings) with the plot command of `plots` and adds the figure `name` to the
// plan's script, taller by one legend line per plot (the legend stands below the axes).
void add_plots_legend_below(FigurePlan& plan, const std::string& name, std::string body,
                            const std::vector<std::string>& plots) {
  body += "plot ";
  for (size_t i = 0; i < plots.size(); ++i) body += (i ? ", \\\n     " : "") + plots[i];
  body += "\n";
  plan.script += both_terminals(name, body, 1000, 540 + 16 * static_cast<int>(plots.size()));
}

// Unique, file-safe stems for run names (sorted input gives stable suffixes).
std::map<std::string, std::string> run_stems(const std::vector<RunRecord>& runs) {
  std::map<std::string, std::string> out;
  std::set<std::string> used;
  for (const auto& r : runs) {
    std::string stem = file_stem(r.name);
    std::string candidate = stem;
    for (int i = 2; used.count(candidate); ++i) candidate = stem + "-" + std::to_string(i);
    used.insert(candidate);
    out[r.name] = candidate;
  }
  return out;
}

// Validation perplexity per epoch: one line per run, or for runs that differ only by seed one
// line of means with sample-std error bars. The paper publishes only its best validation
// perplexity over 30 epochs, so its numbers are horizontal reference lines, drawn for every
// paper row at an L we plotted.
void plan_ppl(const std::vector<RunRecord>& runs, const Published& pub,
              const std::map<std::string, std::string>& stems, FigurePlan& plan) {
  std::vector<std::string> plots;
  std::map<long long, std::set<long long>> our_layers;  // L -> our depths plotted at that L
  double max_epoch = 0;
  bool any_pooled = false, any_quarantined = false, any_unaudited = false;
  int colour = 0;
  for (const auto& g : seed_groups(runs)) {
    const bool has_evals = std::any_of(g.runs.begin(), g.runs.end(),
                                       [](const RunRecord* r) { return !r->evals.empty(); });
    if (!has_evals) continue;
    ++colour;
    const bool unaudited = g.standing == Standing::kUnaudited;
    any_unaudited = any_unaudited || unaudited;
    const std::vector<EpochStat> curve = group_curve(g);
    for (int quarantined = 0; quarantined < 2; ++quarantined) {
      std::string data;
      for (const auto& p : curve) {
        if (p.quarantined != static_cast<bool>(quarantined)) continue;
        max_epoch = std::max(max_epoch, p.epoch);
        data += g.pooled() ? fmt::format("{:.6g} {:.6g} {:.6g}\n", p.epoch, p.ppl.mean,
                                         p.ppl.std.value_or(0.0))
                           : fmt::format("{:.6g} {:.6g}\n", p.epoch, p.ppl.mean);
      }
      if (data.empty()) continue;
      any_quarantined = any_quarantined || quarantined;
      const std::string file = "ppl-" + stems.at(g.first().name) + (g.pooled() ? "-seeds" : "") +
                               (quarantined ? "-quarantined" : "") + ".dat";
      plan.data_files.emplace_back(file, data);
      std::string title = g.pooled() ? g.short_label : g.label;
      if (g.pooled()) title += ": mean ± std over " + seeds_phrase(g.runs.size());
      if (quarantined) title += " QUARANTINED (leaky)";
      if (unaudited && !quarantined) title += " (not audited)";
      const int dash = quarantined ? 2 : (unaudited ? 3 : 1);
      plots.push_back(
          g.pooled()
              ? fmt::format("{} using 1:2:3 with yerrorlines lc {} lw 2 pt 7 ps 0.6 dt {} title {}",
                            q("data/" + file), colour, dash, q(title))
              : fmt::format("{} using 1:2 with linespoints lc {} lw 2 pt 7 ps 0.6 dt {} title {}",
                            q("data/" + file), colour, dash, q(title)));
    }
    any_pooled = any_pooled || g.pooled();
    for (const auto* r : g.runs) {
      if (r->seq_len && r->layers) our_layers[*r->seq_len].insert(*r->layers);
    }
  }
  if (plots.empty()) return;

  std::vector<std::string> drawn;  // caption pieces, one per L with reference lines
  for (const auto& [len, depths] : our_layers) {
    std::vector<std::string> lines;
    std::set<long long> paper_depths;
    for (const auto& p : pub.lm) {
      if (p.schedule != "first" || p.seq_len != len) continue;
      const bool grass = p.family == MixerFamily::kGrassmann;
      plots.push_back(fmt::format("{} with lines lc rgb {} dt 3 lw 2 title {}", p.val_ppl,
                                  grass ? "'gray30'" : "'gray60'",
                                  q("paper " + p.model + " L" + std::to_string(p.seq_len) + ", " +
                                    std::to_string(p.layers) + " layers: " + p.val_ppl_text)));
      lines.push_back(p.model + " " + p.val_ppl_text + " (" + std::to_string(p.layers) + " layers)");
      paper_depths.insert(p.layers);
    }
    if (lines.empty()) continue;
    std::vector<std::string> ours;
    for (long long d : depths) {
      if (!paper_depths.count(d)) ours.push_back(std::to_string(d));
    }
    std::string piece = "at L " + std::to_string(len) + ": " + join_list(lines, ", ");
    if (!ours.empty()) {
      piece += "; the paper has no row at our depth (" + join_list(ours, ", ") + " layers)";
    }
    drawn.push_back(piece);
  }

  std::string body;
  body += any_quarantined
              ? "set title 'Validation perplexity per epoch (dashed: QUARANTINED, leaky weights)'\n"
              : "set title 'Validation perplexity per epoch'\n";
  body += "set xlabel 'epoch'\nset ylabel 'validation perplexity (log scale)'\n";
  const double x_max = std::ceil(max_epoch) + 1;
  body += fmt::format("set xrange [0:{:.0f}]\n", x_max);
  if (x_max <= 10) body += "set xtics 1\n";  // whole epochs; gnuplot would tick every 0.5
  // The legend below the plot: run names are long, and beside it they squeezed the axes.
  body += "set logscale y\nset grid\nset key below left Left reverse\n";
  add_plots_legend_below(plan, "ppl", body, plots);

  std::string caption = "From each run's metrics.jsonl (validation evaluations).";
  if (any_pooled) {
    caption += " Runs that differ only by seed are one line: the mean per epoch, error bars one "
               "sample standard deviation.";
  }
  if (any_quarantined) {
    caption += " Dashed lines are QUARANTINED: perplexities of weights the audit found leaky, not "
               "valid perplexities.";
  }
  if (any_unaudited) caption += " Dotted coloured lines: runs not audited.";
  if (drawn.empty()) {
    caption += " The paper has no row at the sequence lengths plotted, so no reference lines are "
               "drawn.";
  } else {
    caption += " Dotted grey horizontal lines: the paper's best validation perplexities over " +
               fmt_epochs(pub.epochs) + " epochs, for reference, " + join_list(drawn) + ".";
  }
  plan.figures.push_back({"ppl", "Validation perplexity per epoch", caption});
}

// Training cross-entropy against the fractional epoch logged with each "train" record. The x
// axis is the epoch, not tokens: the batch size is not among the artifacts the report reads, and
// an epoch's last batch may be partial, so step x batch x L would not be exact.
void plan_train_loss(const std::vector<RunRecord>& runs,
                     const std::map<std::string, std::string>& stems, FigurePlan& plan) {
  std::vector<std::string> plots;
  bool any_leaky = false, any_unaudited = false;
  int colour = 0;
  for (const auto& r : runs) {
    if (r.task != "lm" || r.train.empty()) continue;
    ++colour;
    const Standing standing = standing_of(r);
    std::string data;
    for (const auto& p : r.train) data += fmt::format("{:.6g} {:.6g}\n", p.epoch, p.loss);
    const std::string file = "train-" + stems.at(r.name) + ".dat";
    plan.data_files.emplace_back(file, data);
    std::string title = r.name;
    int dash = 1;
    if (standing == Standing::kQuarantined) {
      title += " (LEAKY: sees future tokens)";
      dash = 2;
      any_leaky = true;
    } else if (standing == Standing::kUnaudited) {
      title += " (not audited)";
      dash = 3;
      any_unaudited = true;
    }
    plots.push_back(fmt::format(
        "{} using 1:2 with linespoints lc {} lw 2 pt 7 ps 0.5 dt {} title {}", q("data/" + file),
        colour, dash, q(title)));
  }
  if (plots.empty()) return;
  std::string body;
  body += "set title 'Training loss per step (dashed: LEAKY, the model sees future tokens)'\n";
  body += "set xlabel 'epoch (fractional, as logged with each step)'\n";
  body += "set ylabel 'training cross-entropy (nats per token)'\n";
  body += "set yrange [0:*]\nset grid\nset key below left Left reverse\n";
  add_plots_legend_below(plan, "train-loss", body, plots);
  std::string caption =
      "From each language-model run's metrics.jsonl (\"train\" records): the cross-entropy, in "
      "nats per token, of the one training batch at each logged step (training mode, dropout on, "
      "not averaged over steps), against the fractional epoch logged with it.";
  if (any_leaky) {
    caption += " Dashed lines are LEAKY runs: the audit found the model sees future tokens, so "
               "its low loss is not a language-modelling result.";
  }
  if (any_unaudited) caption += " Dotted lines: runs not audited.";
  plan.figures.push_back({"train-loss", "Training loss per step", caption});
}

void plan_leak_maps(const std::vector<RunRecord>& runs,
                    const std::map<std::string, std::string>& stems, FigurePlan& plan) {
  for (const auto& r : runs) {
    if (!r.leak_map || r.leak_map->cells.empty()) continue;
    LeakMapPicture p;
    p.stem = "leakmap-" + stems.at(r.name);
    p.seq_len = r.leak_map->seq_len;
    p.cells = r.leak_map->cells;
    p.horizon = r.audit.leak_horizon;
    std::string verdict = r.audit.verdict.empty() ? "not audited" : r.audit.verdict;
    std::transform(verdict.begin(), verdict.end(), verdict.begin(),
                   [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    p.title = r.name + ": leak map, " + verdict;
    if (r.audit.leak_horizon) p.title += ", horizon " + std::to_string(*r.audit.leak_horizon);
    p.caption = "From " + r.name + "/audit.json: colour is log10 of the relative change of output y_t when the "
                "inputs from position t+D on are replaced (black: no change). Blank: no input at t+D.";
    plan_leak_map(p, plan);
    plan.figures.back().title = "Leak map: " + r.name;
  }
}

void plan_bench(const std::vector<BenchPoint>& bench, FigurePlan& plan) {
  if (bench.empty()) return;
  // One series per mixer: a sweep at fixed tokens per step has a different batch at every L,
  // so the label names tokens per step (B x L) when sweeps differ, never the batch.
  std::set<long long> tokens_per_step, threads;
  for (const auto& p : bench) {
    tokens_per_step.insert(static_cast<long long>(p.batch) * p.seq_len);
    threads.insert(p.threads.value_or(0));
  }
  const bool fixed_tokens = tokens_per_step.size() == 1;
  std::map<std::string, std::map<long long, double>> points;  // label -> L -> tokens/s
  for (const auto& p : bench) {
    std::string label = p.mixer;
    if (!fixed_tokens) label += " (" + std::to_string(static_cast<long long>(p.batch) * p.seq_len) + " tok/step)";
    if (threads.size() > 1) label += " T=" + (p.threads ? std::to_string(*p.threads) : "?");
    points[label][p.seq_len] = p.tokens_per_second;
  }
  std::map<std::string, std::string> series;  // label -> data, sorted by L
  for (const auto& [label, by_len] : points)
    for (const auto& [L, tps] : by_len) series[label] += fmt::format("{} {:.6g}\n", L, tps);
  std::string body;
  body += fixed_tokens ? fmt::format("set title 'Throughput vs sequence length ({} tokens per step)'\n",
                                     *tokens_per_step.begin())
                       : std::string("set title 'Throughput vs sequence length'\n");
  body += "set xlabel 'sequence length L (log scale)'\nset ylabel 'tokens / s (log scale)'\n";
  body += "set logscale x 2\nset logscale y\nset grid\nset key outside right top\n";
  body += "plot ";
  int i = 0;
  for (const auto& [label, data] : series) {
    const std::string file = "bench-" + file_stem(label) + ".dat";
    plan.data_files.emplace_back(file, data);
    body += (i ? ", \\\n     " : "") + fmt::format("{} using 1:2 with linespoints lc {} lw 2 pt 7 title {}",
                                                   q("data/" + file), i + 1, q(label));
    ++i;
  }
  body += "\n";
  plan.script += both_terminals("bench", body, 900, 540);
  plan.figures.push_back({"bench", "Throughput vs sequence length",
                          "From the throughput measurements (bench folder, *.json): one mixer layer, forward + backward, per mixer "
                          "(machine, threads and BLAS in the table below)."});
}


// Learning curves of the runs trained to their best epoch, beside every per-epoch validation point
// the reproductions publish (at their own settings: the legend names them) and the paper's best
// validation perplexities at our runs' L and depth (the paper publishes no curve).
void plan_learning_curves(const std::vector<RunRecord>& runs, const Published& pub,
                          const std::map<std::string, std::string>& stems, FigurePlan& plan) {
  const auto selected = best_epoch_runs(runs);
  std::vector<std::string> plots;
  std::set<std::pair<long long, long long>> settings;  // (L, layers) of our runs
  double max_epoch = 0;
  int colour = 0;
  for (const RunRecord* r : selected) {
    if (r->evals.empty() || standing_of(*r) == Standing::kUnaudited) continue;
    std::string data;
    for (const auto& e : r->evals) {
      data += fmt::format("{:.6g} {:.6g}\n", e.epoch, e.ppl);
      max_epoch = std::max(max_epoch, e.epoch);
    }
    const bool leaky = standing_of(*r) == Standing::kQuarantined;
    const std::string file = "curve-" + stems.at(r->name) + ".dat";
    plan.data_files.emplace_back(file, data);
    std::string title = r->name;
    if (r->best_epoch) {
      title += fmt::format(" (best epoch {}{})", std::llround(*r->best_epoch),
                           reached_best_epoch(*r) ? "" : " so far");
    }
    if (leaky) title += " QUARANTINED (leaky)";
    plots.push_back(fmt::format("{} using 1:2 with linespoints lc {} lw 2 pt 7 ps 0.6 dt {} title {}",
                                q("data/" + file), ++colour, leaky ? 2 : 1, q(title)));
    if (r->seq_len && r->layers) settings.insert({*r->seq_len, *r->layers});
  }
  if (plots.empty()) return;

  int points = 0;
  std::vector<std::string> sources;
  for (const auto& r : pub.repro_lm) {
    const std::string setting = fmt::format("{}, L {}, {} layers", r.tokenizer, r.seq_len, r.layers);
    bool any = false;
    for (const auto& [curve, model] : {std::make_pair(&r.transformer_by_epoch, "Transformer"),
                                       std::make_pair(&r.grassmann_by_epoch, "Grassmann")}) {
      if (curve->empty()) continue;
      std::string data;
      for (const auto& p : *curve) {
        data += fmt::format("{:.6g} {:.6g}\n", p.epoch, p.ppl);
        max_epoch = std::max(max_epoch, p.epoch);
      }
      const std::string file = "curve-repro-" + file_stem(r.name) + "-" + file_stem(model) + ".dat";
      plan.data_files.emplace_back(file, data);
      // Hollow points: squares for Transformer, triangles for Grassmann.
      plots.push_back(fmt::format("{} using 1:2 with points lc rgb {} pt {} ps 0.9 title {}",
                                  q("data/" + file), points % 2 ? "'gray40'" : "'gray60'",
                                  std::string(model) == "Transformer" ? 4 : 8,
                                  q(r.name + " " + model + " (" + setting + ")")));
      ++points;
      any = true;
    }
    if (any) sources.push_back(r.name + " (" + setting + ")");
  }
  std::vector<std::string> paper_lines;
  for (const auto& p : pub.lm) {
    if (p.schedule != "first" || !settings.count({p.seq_len, p.layers})) continue;
    plots.push_back(fmt::format("{} with lines lc rgb {} dt 3 lw 2 title {}", p.val_ppl,
                                p.family == MixerFamily::kGrassmann ? "'gray30'" : "'gray60'",
                                q("paper " + p.model + " L" + std::to_string(p.seq_len) + ", " +
                                  std::to_string(p.layers) + " layers, best of " +
                                  fmt_epochs(pub.epochs) + " epochs: " + p.val_ppl_text)));
    paper_lines.push_back(p.model + " " + p.val_ppl_text);
  }

  std::string body = "set title 'Learning curves to the best epoch'\n";
  body += "set xlabel 'epoch'\nset ylabel 'validation perplexity (log scale)'\n";
  body += fmt::format("set xrange [0:{:.0f}]\n", std::ceil(max_epoch) + 1);
  body += "set logscale y\nset grid\nset key below left Left reverse\n";
  add_plots_legend_below(plan, "learning-curves", body, plots);

  std::string caption =
      "Our runs trained to their best epoch (early stopping): validation perplexity at every "
      "evaluation in metrics.jsonl.";
  caption += sources.empty()
                 ? " No reproduction publishes per-epoch validation perplexities."
                 : " Grey points: every per-epoch validation perplexity a reproduction publishes "
                   "(squares Transformer, triangles Grassmann), at its own setting: " +
                       join_list(sources) + ".";
  caption += paper_lines.empty()
                 ? " The paper publishes no curve and has no row at our runs' L and depth."
                 : " The paper publishes no curve, only its best over " + fmt_epochs(pub.epochs) +
                       " epochs (dotted grey lines: " + join_list(paper_lines, ", ") + ").";
  plan.figures.push_back({"learning-curves", "Learning curves to the best epoch", caption});
}
}  // namespace

FigurePlan plan_figures(const std::vector<RunRecord>& runs, const std::vector<BenchPoint>& bench,
                        const Published& pub) {
  FigurePlan plan;
  const auto stems = run_stems(runs);
  plan_ppl(runs, pub, stems, plan);
  plan_learning_curves(runs, pub, stems, plan);
  plan_train_loss(runs, stems, plan);
  plan_leak_maps(runs, stems, plan);
  plan_bench(bench, plan);
  return plan;
}

}  // namespace grassaudit
