// grassaudit bench: throughput of one mixer layer (forward + backward) or of one whole-model
// training step. See src/bench/bench.h for what is timed.
#include <fmt/format.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "bench/bench.h"
#include "audit/model_signature.h"
#include "bench/decode_bench.h"
#include "bench/file_forward_bench.h"
#include "cli/cli_common.h"
#include "cli/commands.h"
#include "core/lm_loss.h"
#include "runtime/runtime.h"
#include "core/token_mixer.h"
#include "train/gate.h"
#include "train/presets.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/make_dirs.h"

namespace grassaudit::cli {
namespace {

const char* kBenchUsage =
    "usage: grassaudit bench --mixer NAME[,NAME...] --batch B --seq-len L [--d-model 256] [--rank 32]\n"
    "                        [--offsets 1,2,4,8,12,16] [--offset-mode all|per-layer] [--heads 4]\n"
    "                        [--threads T] [--reps N] [--warmup N] [--dropout P] [--json FILE]\n"
    "       grassaudit bench --mixer NAME[,NAME...] --tokens T --seq-len L1,L2,...   (sweep, batch = T / L)\n"
    "       grassaudit bench --model PRESET --mixer NAME[,NAME...] [--batch B] [--threads T] [--reps N]\n"
    "                        [--loss-impl fused,materialized] [--loss-chunk N[,N...]] [--profile-ops]\n"
    "       grassaudit bench --decode --model PRESET --mixer past,attention [--contexts 128,...,4096]\n"
    "                        [--decode-steps N] [--batch B] [--reps N] [--threads T]\n"
    "       grassaudit bench --files A.pt,B.pt2 --input tokens:V [--input ...] [--batch B] [--seq-len L]\n"
    "                        [--reps N] [--threads T]\n"
    "\n"
    "Layer mode: one mixer layer, forward + backward of mean(y^2), float32, input requiring grad,\n"
    "after --warmup untimed reps; dropout 0 unless --dropout (as reference/python/bench_mha.py).\n"
    "Offsets: in 'all' mode the layer pairs with every offset; in 'per-layer' mode the single\n"
    "benchmarked layer is layer 0 of the schedule and uses offsets[0] only.\n"
    "Model mode: one training step (forward, cross-entropy, backward, AdamW step) of the preset's\n"
    "model, as reference/python/bench_train_step.py; also reports analytic FLOPs, the achieved\n"
    "GFLOP/s and the machine's measured sgemm rate. The loss is computed by each --loss-impl given\n"
    "(default fused: the chunked head, --loss-chunk tokens at a time; materialized: the full\n"
    "[B*L, V] logits); every mixer x impl (x chunk) is its own entry with \"loss_impl\" in its JSON.\n"
    "--profile-ops adds \"op_profile\": one more step per entry under the op profiler, self time by\n"
    "op and by category (gemm, layer_norm, gelu, dropout, attention_softmax, ...).\n"
    "Decode mode: the preset's model (untrained, max_len = the largest context + steps) generating through\n"
    "its incremental path: per context, a prefill (untimed), then --decode-steps single-token steps\n"
    "(head included); tokens_per_second, ms_per_token and the state's bytes (KV cache / Grassmann buffer).\n"
    "Files mode: plain eval-mode forwards of [B, L] (default 32 x 128) through each model file (any format\n"
    "the audit reads; --input as for audit), no gradients, reps interleaved file by file: one format's\n"
    "interpreter against another on the same model; each file's first output against the first file's\n"
    "(max_abs_diff_vs_first, max_rel_diff_vs_first: over the first file's max |y|).\n"
    "Several comma-separated mixers (and sequence lengths) are timed in one run with their reps\n"
    "interleaved, so their ratios are measured side by side. Output: JSON on stdout (one object, or {\"results\": [...]}\n"
    "for several mixers) with tokens_per_second (median over reps), ms_per_step {median,min,max},\n"
    "threads, peak_rss_mb, blas, mixer, batch, seq_len, machine; --json FILE writes the same.";

std::vector<std::string> split_names(const std::string& text, const char* flag = "--mixer") {
  std::vector<std::string> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ','))
    if (!item.empty()) out.push_back(item);
  if (out.empty()) throw InputError(fmt::format("{} needs at least one name", flag));
  return out;
}

// --audit-cost: the gate's time beside the epoch it is compared with.
struct AuditCost {
  double audit_seconds, epoch_seconds;
  std::string verdict;
  int64_t probes;
  std::string precision;
  double forward_equivalents;  // what the gate ran, in forwards of its audited batch (AuditResult::forwards)
};

// One result's JSON (with the GEMM fraction and the audit cost when measured), and its line on stderr.
// gemm_bf16 > 0 (a bf16 entry was timed): fraction_of_gemm is against the faster unit.
nlohmann::json result_entry(const BenchTiming& t, double gemm, const AuditCost* ac, double gemm_bf16 = 0) {
  auto j = to_json(t);
  if (gemm > 0) {
    j["gemm_gflops"] = gemm;
    if (gemm_bf16 > 0) j["gemm_gflops_bf16"] = gemm_bf16;
    j["fraction_of_gemm"] = j["achieved_gflops"].get<double>() / std::max(gemm, gemm_bf16);
  }
  if (ac) {
    j["audit_seconds"] = ac->audit_seconds;
    j["audit_verdict"] = ac->verdict;
    j["audit_probes"] = ac->probes;
    j["audit_precision"] = ac->precision;
    j["epoch_seconds_estimate"] = ac->epoch_seconds;
    j["audit_fraction_of_epoch"] = ac->audit_seconds / ac->epoch_seconds;
    // The gate in training steps of the same model, timed in the same process.
    const double steps = ac->audit_seconds / (t.ms.median / 1000);
    j["audit_training_steps"] = steps;
    j["audit_forward_equivalents"] = ac->forward_equivalents;
    std::cerr << fmt::format("{:>26s}  gate audit {:.1f} s ({}) = {:.1f} training steps = {:.2f}% of a {:.0f} s "
                             "training epoch; it ran {:.1f} forward-equivalents\n",
                             t.mixer, ac->audit_seconds, ac->verdict, steps, 100 * ac->audit_seconds / ac->epoch_seconds,
                             ac->epoch_seconds, ac->forward_equivalents);
  }
  std::string label = t.mixer;
  if (!t.loss_impl.empty()) label += " " + t.loss_impl + (t.loss_chunk > 0 ? fmt::format("/{}", t.loss_chunk) : "");
  if (!t.precision.empty() && t.precision != "fp32") label += " " + t.precision;
  std::cerr << fmt::format("{:>26s}  B={:<4d} L={:<5d} {:>10.0f} tokens/s  {:8.2f} ms/step (min {:.2f}, max {:.2f})  "
                           "peak RSS {:.0f} MB{}\n",
                           label, t.batch, t.seq_len, t.tokens_per_second, t.ms.median, t.ms.min, t.ms.max,
                           t.peak_rss_mb,
                           gemm > 0 ? fmt::format("  {:.2f} of {}{}", j["fraction_of_gemm"].get<double>(),
                                                  gemm_bf16 > gemm ? "the bf16 GEMM rate" : "sgemm",
                                                  t.fraction_beside > 0
                                                      ? fmt::format(" ({:.2f} of the rate measured beside each step)",
                                                                    t.fraction_beside)
                                                      : "")
                                    : "");
  return j;
}

// The value of an integer flag, or `fallback`.
int64_t opt_int(const po::variables_map& vm, const char* key, int64_t fallback) {
  return vm.count(key) ? vm[key].as<int64_t>() : fallback;
}
int opt_reps(const po::variables_map& vm, const char* key, int fallback) {
  return vm.count(key) ? vm[key].as<int>() : fallback;
}

// The JSON on stdout, and in --json FILE when given.
void emit(const po::variables_map& vm, const nlohmann::json& doc) {
  const std::string text = doc.dump(2) + "\n";
  std::cout << text;
  if (vm.count("json")) write_file_atomic(vm["json"].as<std::string>(), text);
}

// What the layer and model modes time: one entry per timed configuration, and the units beside them.
struct Timings {
  std::vector<BenchTiming> results;
  double gemm = 0, gemm_bf16 = 0;
  std::map<size_t, AuditCost> audit_costs;  // --audit-cost: by result index
};

po::options_description bench_options(int* threads) {
  po::options_description desc("bench options");
  desc.add_options()
      ("mixer", po::value<std::string>(), "mixer name(s), comma-separated (see grassaudit mixers)")
      ("files", po::value<std::string>(), "files mode: model files, comma-separated, timed side by side")
      ("input", po::value<std::vector<std::string>>(), "files mode: [NAME=]KIND as for audit (repeatable)")
      ("model", po::value<std::string>(), "time a whole-model training step of this preset (e.g. paper-6l-L128)")
      ("batch", po::value<int64_t>(), "batch size B (layer default 32; model default: the preset's)")
      ("seq-len", po::value<std::string>(), "sequence length L, or a comma list for layer sweeps (layer default 128; model default: the preset's max_len)")
      ("tokens", po::value<int64_t>(), "layer mode: fixed tokens per step, batch = tokens / L (instead of --batch)")
      ("reps", po::value<int>(), "timed reps (layer default 10, model default 3); the median is reported")
      ("warmup", po::value<int>(), "untimed warm-up reps per mixer (layer default 2, model default 1)")
      ("json", po::value<std::string>(), "also write the JSON to this file")
      ("loss-impl", po::value<std::string>(),
       "model mode: fused (default) and/or materialized, comma-separated; each is timed, interleaved")
      ("loss-chunk", po::value<std::string>(),
       "model mode, fused loss: tokens per head chunk, or a comma list (a sweep; default the built-in size)")
      ("profile-ops", "model mode: profile one more step of each entry, op by op (self time), into \"op_profile\"")
      ("precision", po::value<std::string>(),
       "model mode: fp32 and/or bf16, comma-separated; each entry timed in each, interleaved (bf16: the forward and "
       "loss under CPU bf16 autocast, as train --precision bf16; needs native bf16)")
      ("decode", "decode mode: single-token steps through the incremental path at each --contexts length")
      ("contexts", po::value<std::string>(), "decode mode: context lengths (default 128,256,512,1024,2048,4096)")
      ("decode-steps", po::value<int64_t>(), "decode mode: timed single-token steps per context (default 32)")
      ("audit-cost", po::value<int64_t>(),
       "model mode: also time one gate audit of each model (the trainer's settings, run halfway through the "
       "timed steps on the model being timed) and compare it with an epoch of this many training tokens at the "
       "measured rate (WikiText-2 wordpiece train: 2265484)");
  add_threads_option(desc, threads);
  add_model_options(desc);
  return desc;
}

// --files: model files' forwards, side by side.
int run_files(const po::variables_map& vm) {
  for (const char* flag : {"mixer", "model", "decode", "tokens", "loss-impl", "loss-chunk", "profile-ops",
                           "precision", "audit-cost", "contexts", "decode-steps"})
    if (vm.count(flag)) throw InputError(fmt::format("--{} does not apply to --files", flag));
  if (!vm.count("input")) throw InputError("--files needs --input (as for audit: tokens:V, features:C, ...)");
  FileForwardOptions o;
  o.files = split_names(vm["files"].as<std::string>(), "--files");
  for (const auto& text : vm["input"].as<std::vector<std::string>>()) o.inputs.push_back(InputBinding::parse(text));
  o.batch = opt_int(vm, "batch", 32);
  if (vm.count("seq-len")) {
    auto Ls = parse_int_list(vm["seq-len"].as<std::string>(), "--seq-len");
    if (Ls.size() != 1) throw InputError("--files takes one --seq-len");
    o.seq_len = Ls[0];
  }
  o.reps = opt_reps(vm, "reps", 5);
  o.warmup = opt_reps(vm, "warmup", 1);
  print_runtime_banner();
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& t : bench_file_forward(o)) {
    arr.push_back(to_json(t));
    std::cerr << fmt::format("{:>40s}  {:<12s} B={} L={}  {:8.1f} ms/forward (min {:.1f}, max {:.1f}), max rel diff {}\n",
                             t.file, t.format, t.batch, t.seq_len, t.ms.median, t.ms.min, t.ms.max,
                             t.max_rel_diff ? fmt::format("{:.2g}", *t.max_rel_diff) : "-");
  }
  emit(vm, nlohmann::json{{"files", arr}});
  return kExitOk;
}

// --decode: single-token steps through the incremental path at each context length.
int run_decode(const po::variables_map& vm, const std::vector<std::string>& mixers) {
  if (!vm.count("model")) throw InputError("--decode needs --model PRESET (the model's size)");
  for (const char* flag : {"loss-impl", "loss-chunk", "profile-ops", "audit-cost", "tokens", "seq-len", "precision"})
    if (vm.count(flag)) throw InputError(fmt::format("--{} does not apply to --decode", flag));
  Preset preset = get_preset(vm["model"].as<std::string>());
  DecodeBenchOptions o;
  o.mixers = mixers;
  o.model = model_config_from_flags(vm, preset.model);
  o.model.dropout = 0.0;
  if (vm.count("contexts")) o.contexts = parse_int_list(vm["contexts"].as<std::string>(), "--contexts");
  o.steps = opt_int(vm, "decode-steps", 32);
  o.batch = opt_int(vm, "batch", 1);
  o.reps = opt_reps(vm, "reps", 3);
  o.warmup = opt_reps(vm, "warmup", 1);
  check_decode_bench(o);
  print_runtime_banner();
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& t : bench_decode(o)) {
    auto j = to_json(t);
    j["preset"] = preset.name;
    arr.push_back(j);
  }
  emit(vm, nlohmann::json{{"decode", arr}});
  return kExitOk;
}

// --model: whole-model training steps of a preset (and --audit-cost: its gate audit beside them).
Timings run_models(const po::variables_map& vm, const std::vector<std::string>& mixers) {
  Timings out;
  Preset preset = get_preset(vm["model"].as<std::string>());
  ModelBenchOptions o;
  o.preset = preset.name;
  o.mixers = mixers;
  o.model = model_config_from_flags(vm, preset.model);
  if (vm.count("tokens")) throw InputError("--tokens applies to layer benchmarks, not --model");
  if (vm.count("seq-len")) {
    auto Ls = parse_int_list(vm["seq-len"].as<std::string>(), "--seq-len");
    if (Ls.size() != 1) throw InputError("--model takes one --seq-len");
    o.model.max_len = Ls[0];
  }
  o.batch = opt_int(vm, "batch", preset.train.batch);
  o.lr = preset.train.lr;
  o.weight_decay = preset.train.weight_decay;
  o.reps = opt_reps(vm, "reps", 3);
  o.warmup = opt_reps(vm, "warmup", 1);
  if (vm.count("loss-impl")) {
    o.loss_impls.clear();
    for (const auto& name : split_names(vm["loss-impl"].as<std::string>(), "--loss-impl"))
      o.loss_impls.push_back(parse_loss_impl(name));
  }
  if (vm.count("loss-chunk")) {
    if (std::find(o.loss_impls.begin(), o.loss_impls.end(), LossImpl::kFused) == o.loss_impls.end())
      throw InputError("--loss-chunk applies to --loss-impl fused");
    o.loss_chunks = parse_int_list(vm["loss-chunk"].as<std::string>(), "--loss-chunk");
  }
  o.profile_ops = vm.count("profile-ops") > 0;
  if (vm.count("precision")) o.precisions = split_names(vm["precision"].as<std::string>(), "--precision");
  // The unit beside every step: the faster of sgemm and (where bf16 is timed) bf16 GEMM, each
  // the better of two measurements in a row: a bf16 GEMM right after float32 BLAS work (a
  // float32 step, an sgemm) can run at half rate for tens of milliseconds (measured here: 184-217
  // GFLOP/s, then 341-392), which would flatter the step.
  const bool times_bf16 = std::count(o.precisions.begin(), o.precisions.end(), "bf16") > 0;
  o.unit_rate = [times_bf16] {
    double best = 0;
    if (times_bf16)
      for (int i = 0; i < 2; ++i) best = std::max(best, measure_gemm_gflops(1024, 7, at::kBFloat16));
    for (int i = 0; i < 2; ++i) best = std::max(best, measure_gemm_gflops(1024, 7));
    return best;
  };
  check_model_bench(o);  // every value checked before the banner and any work
  int64_t epoch_tokens = 0;
  std::vector<AuditResult> audits;  // by entry (mixer x loss impl x chunk), as results
  if (vm.count("audit-cost")) {
    epoch_tokens = vm["audit-cost"].as<int64_t>();
    if (epoch_tokens < 1) throw InputError("--audit-cost needs a positive token count");
    if (o.reps < 2) throw InputError("--audit-cost needs --reps >= 2 (steps are timed before and after the audit)");
    // The gate exactly as the trainer runs it, on the model being timed, between its timed
    // steps: the two figures of the ratio come from the same minutes of the same process.
    o.midway = [&](size_t k, LanguageModel& lm) {
      AuditGate gate(gate_audit_options(lm->config().max_len, preset.train.audit_trials, preset.train.audit_batch,
                                        preset.train.seed));
      if (audits.size() <= k) audits.resize(k + 1);
      audits[k] = gate.audit(lm);
      std::cerr << fmt::format("{:>26s}  gate audit: {} in {:.1f} s ({} probes, {})\n",
                               o.preset + ":" + lm->config().mixer,
                               verdict_name(audits[k].verdict()), audits[k].seconds, audits[k].probes, audits[k].precision);
    };
  }
  print_runtime_banner();
  out.results = bench_models(o);
  out.gemm = measure_gemm_gflops(1024, 5);
  if (std::count(o.precisions.begin(), o.precisions.end(), "bf16") > 0)
    out.gemm_bf16 = measure_gemm_gflops(1024, 5, at::kBFloat16);
  if (epoch_tokens > 0)
    for (size_t k = 0; k < out.results.size(); ++k) {
      const auto& t = out.results[k];
      const auto& a = audits[k];
      const double unit = static_cast<double>(a.unit_rows * a.unit_len);
      out.audit_costs[k] = {a.seconds, epoch_tokens / t.tokens_per_second, verdict_name(a.verdict()), a.probes,
                        a.precision, unit > 0 ? a.forwards.total().tokens / unit : 0.0};
    }
  return out;
}

// One mixer layer, forward and backward, at each length.
Timings run_layers(const po::variables_map& vm, const std::vector<std::string>& mixers) {
  Timings out;
  for (const char* flag : {"loss-impl", "loss-chunk", "profile-ops", "precision"})
    if (vm.count(flag)) throw InputError(fmt::format("--{} applies to --model benchmarks", flag));
  LayerBenchOptions o;
  o.mixers = mixers;
  ModelConfig base;
  base.offset_mode = "all";
  base.dropout = 0.0;
  o.model = model_config_from_flags(vm, base);
  if (vm.count("tokens") && vm.count("batch")) throw InputError("give --batch or --tokens, not both");
  o.batch = opt_int(vm, "batch", 32);
  o.tokens = opt_int(vm, "tokens", 0);
  if (vm.count("tokens") && o.tokens < 1) throw InputError(fmt::format("--tokens must be >= 1, got {}", o.tokens));
  if (vm.count("seq-len")) o.seq_lens = parse_int_list(vm["seq-len"].as<std::string>(), "--seq-len");
  o.reps = opt_reps(vm, "reps", 10);
  o.warmup = opt_reps(vm, "warmup", 2);
  for (int64_t L : o.seq_lens)
    for (const auto& m : mixers) layer_bench_config(o, m, L);  // every value checked first
  print_runtime_banner();
  out.results = bench_layers(o);
  return out;
}

int run(int argc, char** argv) {
  int threads = 0;
  po::options_description desc = bench_options(&threads);
  po::variables_map vm;
  if (!parse(argc, argv, desc, vm, kBenchUsage)) return kExitOk;
  configure_threads(threads);
  if (vm.count("json")) {  // its folder made and checked now, not after minutes of timing
    const std::string path = vm["json"].as<std::string>();
    auto parent = std::filesystem::path(path).parent_path();
    if (!parent.empty()) make_dirs(parent.string());
    check_output_path(path, "--json");
  }
  if (vm.count("files")) return run_files(vm);
  if (vm.count("input")) throw InputError("--input applies to --files");
  if (!vm.count("mixer")) throw InputError("bench needs --mixer (or --files)");
  const auto mixers = split_names(vm["mixer"].as<std::string>());
  for (const auto& m : mixers) MixerRegistry::instance().check_name(m);
  if (vm.count("decode")) return run_decode(vm, mixers);
  for (const char* flag : {"contexts", "decode-steps"})
    if (vm.count(flag)) throw InputError(fmt::format("--{} applies to --decode", flag));

  const Timings t = vm.count("model") ? run_models(vm, mixers) : run_layers(vm, mixers);
  nlohmann::json arr = nlohmann::json::array();
  for (size_t k = 0; k < t.results.size(); ++k)
    arr.push_back(result_entry(t.results[k], t.gemm, t.audit_costs.count(k) ? &t.audit_costs.at(k) : nullptr, t.gemm_bf16));
  emit(vm, arr.size() == 1 ? arr[0] : nlohmann::json{{"results", arr}});
  return kExitOk;
}

}  // namespace

int bench_main(int argc, char** argv) {
  return guarded("bench", [&] { return run(argc, argv); });
}

}  // namespace grassaudit::cli
