// grassaudit audit: the causality audit from the command line.
//   --model FILE [--input tokens:V|features:C ...] --seq-len L   a user's model (torch.export, ONNX or TorchScript;
//                                                              without --input, the inputs the file describes)
//   --mixer NAME [--checkpoint FILE] [model flags]            a built-in LM (untrained or trained)
//   --checkpoint FILE                                          the mixer stored in the checkpoint
//   --suite FILE                                               a suite of control models
// Exit: 0 every property holds within the declared contract (--allow-lookahead, --window),
//       1 a violation (future, length, batch, window, structural, incremental; or a suite case off), 2 usage/input error.
#include <ATen/ATen.h>
#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "audit/audit_option_fields.h"
#include "audit/audit_refusal.h"
#include "audit/audit_shard.h"
#include "audit/audit_suite.h"
#include "audit/incremental_audit.h"
#include "audit/inputs_inferred.h"
#include "formats/builtin/builtin_target.h"
#include "audit/causality_audit.h"
#include "audit/output_audit.h"
#include "audit/property_search.h"
#include "formats/input_findings.h"
#include "formats/model_file.h"
#include "formats/model_inputs.h"
#include "cli/cli_common.h"
#include "cli/commands.h"
#include "core/checkpoint.h"
#include "runtime/distributed.h"
#include "runtime/runtime.h"
#include "core/token_mixer.h"
#include "train/rank_output.h"
#include "report/audit_page.h"
#include "report/figures/gnuplot.h"
#include "report/figures/leak_map_figure.h"
#include "util/atomic_file.h"
#include "util/error.h"

namespace grassaudit::cli {

namespace {

namespace fs = std::filesystem;

// --leak-map FILE.svg / FILE.png: a picture; any other name: CSV (t,D,effect).
bool is_picture(const std::string& path) {
  const std::string ext = fs::path(path).extension().string();
  return ext == ".svg" || ext == ".png";
}

// Pictures are drawn by gnuplot: its absence is one line before the audit runs.
void require_gnuplot(const std::string& what) {
  if (!find_program("gnuplot"))
    throw InputError(what + ": gnuplot was not found (install gnuplot; --leak-map FILE.csv needs none)");
}
const std::string kAuditUsage =
    "usage: grassaudit audit --model FILE [--input [NAME=]KIND ...] --seq-len L [options]\n"
    "       FILE: TorchScript, torch.export (.pt2) or ONNX, read by content\n"
    "       KIND: tokens:V | features:C (perturbed) | ones | zeros (held fixed, int64 [B, L]) | const:VALUE (a\n"
    "       scalar, graph files); one --input per forward argument, in order or by NAME; --time-axis K for [B, C, T]\n"
    "       layouts; --output PATH for one leaf; --state IN=OUT (repeatable) runs a streaming ONNX step chunk by chunk\n"
    "       Without --input the file's own inputs are used: an integer input that indexes an embedding table is\n"
    "       tokens:V (V its rows), a float [B, T, C] input features:C (C declared, or for TorchScript fixed by the\n"
    "       first op that reads it), a mask input ones; the summary says what was inferred, and a file that does\n"
    "       not say enough is one line naming each input and what to pass (exit 2)\n"
    "       grassaudit audit --mixer future|past|attention [--checkpoint FILE] [model flags] [options]\n"
    "       grassaudit audit --suite audits/controls.json [options]\n"
    "Contract: y_t may read x_{t-W+1} .. x_{t+K} (--window W, --allow-lookahead K; default: x_0 .. x_t),\n"
    "its outputs may not depend on the sequence length or on other rows of the batch.\n"
    "Exit status: 0 every property holds within the contract, 1 a violation (future, length, batch, window, structural, incremental),\n"
    "2 usage or input error.\n" +
    data_parallel_usage("audit", "\n  divides the probe rows over the ranks (same verdict and horizon; rank 0 prints and writes).");

int run_suite(const std::string& path, const AuditOptions& opt, const std::string& json_path) {
  auto results = run_audit_suite(path, opt, open_model_file);
  int failures = 0;
  nlohmann::json cases = nlohmann::json::array();
  std::cout << fmt::format("{:<34} {:>8} {:>8} {:>8} {:>8}  {}\n", "case", "expect", "got", "horizon", "seconds", "");
  for (const auto& r : results) {
    std::cout << fmt::format("{:<34} {:>8} {:>8} {:>4}/{:<3} {:>8.2f}  {}{}\n", r.name, r.expected_verdict, r.verdict,
                             r.horizon, r.expected_horizon, r.seconds, r.pass ? "ok" : "MISMATCH: ",
                             r.pass ? (r.rounding_only ? " (rounding only)" : "") : r.detail);
    failures += r.pass ? 0 : 1;
    cases.push_back({{"name", r.name}, {"verdict", r.verdict}, {"expected_verdict", r.expected_verdict},
                     {"leak_horizon", r.horizon}, {"expected_leak_horizon", r.expected_horizon},
                     {"rounding_only", r.rounding_only}, {"pass", r.pass}, {"seconds", r.seconds}});
  }
  std::cout << fmt::format("suite: {} cases, {} passed, {} failed\n", results.size(), results.size() - failures, failures);
  if (!json_path.empty())
    if (dist::is_main()) write_file_atomic(json_path, nlohmann::json{{"suite", path}, {"cases", cases}, {"failures", failures}}.dump(2) + "\n");
  return failures == 0 ? kExitOk : kExitFinding;
}
}  // namespace

namespace {

void add_audit_options(po::options_description& desc) {
  desc.add_options()
      ("model", po::value<std::string>(), "model file: torch.export (.pt2), ONNX or TorchScript (forward: ids [B,L] or features [B,L,C])")
      ("input", po::value<std::vector<std::string>>()->composing(),
       "with --model, once per forward argument: [NAME=]tokens:V | features:C | ones | zeros | const:VALUE\n"
       "(left out: inferred from the file; the summary and the JSON's inputs_inferred say what)")
      ("state", po::value<std::vector<std::string>>()->composing(),
       "with an ONNX --model: IN=OUT, a state input and the output that returns its next value (repeatable);\n"
       "the graph is one step, run chunk by chunk with the states carried")
      ("state-init", po::value<std::string>(),
       "with --state: the initial states (an ONNX model whose initializers are named after them, or one\n"
       "TensorProto); default zeros")
      ("time-axis", po::value<int64_t>()->default_value(1),
       "with --model: the dimension of time in every perturbed input and every output (2 for [B, C, T])")
      ("mixer", po::value<std::string>(), "built-in mixer: future | past | attention")
      ("checkpoint", po::value<std::string>(), "grassaudit checkpoint to audit")
      ("suite", po::value<std::string>(), "suite of control models (JSON)")
      ("seq-len", po::value<int64_t>(), "sequence length L (built-in default: the model's max_len; a model file exported at one length: that length)")
      ("feature-scale", po::value<double>()->default_value(1.0), "std of random features (features input)")
      ("output", po::value<std::string>()->default_value("hidden"),
       "built-in: hidden (final LayerNorm output; the tied head is position-wise, so causality is\n"
       "the same as for logits, at a fraction of the cost) or logits; with --model: the one output leaf\n"
       "to audit, e.g. [0] or [\"logits\"] (default: every leaf with the time axis)")
      ("json", po::value<std::string>(), "write the result as JSON")
      ("leak-map", po::value<std::string>(),
       "write the leak map: FILE.svg or FILE.png a picture (drawn by gnuplot), any other name CSV (t,D,effect)")
      ("report", po::value<std::string>(),
       "write one page for the audit into this folder: README.md (verdict, contract, each check's result and cost,\n"
       "the evidence, the summary) with the leak map as leakmap.svg and leakmap.png");
  // What the audit is asked to do: audit/audit_option_fields.h, with the defaults shown.
  add_config_flags(desc, audit_option_fields(), AuditOptions{});
}

// The options every audit source shares (seq_len comes with the target).
AuditOptions audit_options_from(const po::variables_map& vm) {
  AuditOptions opt;
  apply_config_flags(vm, audit_option_fields(), opt);
  validate_audit_options(opt);
  return opt;
}

// --model (a model file, its format read from its content: formats/model_file.h) or --mixer/--checkpoint (a built-in LM); sets opt.seq_len.
// Without --input, the inputs are read from the file (formats/model_inputs.h) and `inferred` says what they are.
std::unique_ptr<AuditTarget> make_target(const po::variables_map& vm, AuditOptions& opt, InputsInferred& inferred) {
  if (vm.count("model")) {
    std::vector<InputBinding> inputs;
    if (vm.count("input"))
      for (const auto& text : vm["input"].as<std::vector<std::string>>()) inputs.push_back(InputBinding::parse(text));
    const double scale = vm["feature-scale"].as<double>();
    if (!(scale > 0)) throw InputError("--feature-scale must be > 0");
    StreamingOptions streaming;
    if (vm.count("state"))
      for (const auto& text : vm["state"].as<std::vector<std::string>>()) streaming.state.push_back(StreamingOptions::parse_pair(text));
    if (vm.count("state-init")) {
      if (!streaming.active()) throw InputError("--state-init needs --state IN=OUT");
      streaming.state_init = vm["state-init"].as<std::string>();
    }
    const std::string path = vm["model"].as<std::string>();
    const int64_t time_axis = vm["time-axis"].as<int64_t>();
    if (!vm.count("input")) {
      inputs = infer_model_inputs(path, time_axis, streaming);
      for (const auto& b : inputs) inferred.emplace_back(b.name, binding_kind(b));
    }
    auto target = open_model_file(path, inputs, time_axis, scale, streaming);
    // A file that runs at one length is audited there without being told; any other needs --seq-len.
    const DeclaredRange lengths = target->seq_len_range();
    if (vm.count("seq-len"))
      opt.seq_len = vm["seq-len"].as<int64_t>();
    else if (lengths.is_static())
      opt.seq_len = lengths.lo;
    else
      throw InputError(lengths.any() ? std::string("--model needs --seq-len")
                                     : fmt::format("--model needs --seq-len (the file runs at sequence lengths {})",
                                                   lengths.str()));
    return target;
  }
  if (vm.count("state") || vm.count("state-init")) throw InputError("--state and --state-init are for an ONNX --model");
  if (!vm["time-axis"].defaulted()) throw InputError("--time-axis is for --model");
  if (vm.count("input")) throw InputError("--input is for --model (built-in models take tokens)");
  LanguageModel model{nullptr};
  if (vm.count("checkpoint")) {
    auto loaded = load_checkpoint(vm["checkpoint"].as<std::string>());
    if (vm.count("mixer") && vm["mixer"].as<std::string>() != loaded.config.mixer)
      throw InputError(fmt::format("--mixer {} conflicts with the checkpoint's mixer {}", vm["mixer"].as<std::string>(),
                                   loaded.config.mixer));
    model = loaded.model;
  } else {
    ModelConfig cfg;
    cfg.mixer = vm["mixer"].as<std::string>();
    cfg = model_config_from_flags(vm, cfg);
    cfg.validate();
    at::manual_seed(opt.seed);
    model = LanguageModel(cfg);
  }
  opt.seq_len = vm.count("seq-len") ? vm["seq-len"].as<int64_t>() : model->config().max_len;
  if (opt.seq_len > model->config().max_len)
    throw InputError(fmt::format("--seq-len {} exceeds the model's max_len {}", opt.seq_len, model->config().max_len));
  return std::make_unique<BuiltinLmTarget>(model, vm["output"].as<std::string>());
}

}  // namespace

int audit_main(int argc, char** argv) {
  return guarded("audit", [&]() -> int {
    po::options_description desc("audit options");
    add_audit_options(desc);
    int threads = 0;
    add_threads_option(desc, &threads);
    double dist_timeout = 0;
    add_dist_timeout_option(desc, &dist_timeout);
    add_model_options(desc);
    po::variables_map vm;
    if (!parse(argc, argv, desc, vm, kAuditUsage)) return kExitOk;
    configure_threads(threads);
    // Started by torchrun: the probe rows are divided over the ranks (audit/audit_shard.h); every
    // rank reaches the same result, rank 0 alone prints and writes.
    dist::init_from_env("cpu", dist_timeout);
    const RankOutputGuard print_once;
    const ShardedAuditScope sharded;

    AuditOptions opt = audit_options_from(vm);
    parse_audit_device(opt.device);  // one line now, before any model is read
    const std::string json_path = vm.count("json") ? vm["json"].as<std::string>() : "";
    if (vm.count("json")) check_output_path(json_path, "--json");  // before the audit, not after it
    if (vm.count("leak-map")) {
      const std::string path = vm["leak-map"].as<std::string>();
      check_output_path(path, "--leak-map");
      if (is_picture(path)) require_gnuplot("--leak-map " + path);
    }
    if (vm.count("report")) {
      const std::string dir = vm["report"].as<std::string>();
      std::error_code ec;
      fs::create_directories(dir, ec);
      if (ec) throw InputError(fmt::format("cannot create {} (--report): {}", dir, ec.message()));
      check_output_path((fs::path(dir) / "README.md").string(), "--report");
      require_gnuplot("--report");
    }

    const int sources = int(vm.count("model")) + int(vm.count("suite")) +
                        int(vm.count("mixer") || vm.count("checkpoint"));
    if (sources != 1) throw InputError("give exactly one of --model, --mixer/--checkpoint, --suite");
    if (vm.count("suite")) return run_suite(vm["suite"].as<std::string>(), opt, json_path);

    InputsInferred inferred;
    std::unique_ptr<AuditTarget> target = make_target(vm, opt, inferred);
    place_on_device(*target, opt.device);
    for (int64_t l : opt.seq_lens)
      if (l < 2 || l > opt.seq_len) throw InputError(fmt::format("--seq-lens entries must be in [2, --seq-len], got {}", l));

    if (opt.incremental) require_incremental(*target);  // refused before any probe: exit 2, one line

    AuditResult result;
    std::optional<std::string> only;
    if (auto* ts = dynamic_cast<ModelFileTarget*>(target.get())) {  // leaf by leaf (audit/output_audit.h)
      if (!vm["output"].defaulted()) only = vm["output"].as<std::string>();
      result = run_output_audits(*ts, opt, only);
    } else {
      result = run_causality_audit(*target, opt);
    }
    run_model_checks(*target, opt, only, result);
    const std::string summary = with_inputs_inferred(summarize(result), inferred);
    std::cout << summary;
    nlohmann::json facts = to_json(result);
    add_inputs_inferred(facts, inferred);
    if (!json_path.empty() && dist::is_main()) write_file_atomic(json_path, facts.dump(2) + "\n");
    if (vm.count("leak-map") && dist::is_main()) {
      const std::string path = vm["leak-map"].as<std::string>();
      if (!is_picture(path)) {
        write_file_atomic(path, leak_map_csv(result));
      } else {
        write_file_atomic(path, draw_leak_map(facts, fs::path(path).extension().string().substr(1), "gnuplot"));
      }
    }
    if (vm.count("report") && dist::is_main()) {
      const std::string dir = vm["report"].as<std::string>();
      for (const auto& [name, bytes] : audit_page(facts, summary, "gnuplot"))
        write_file_atomic((fs::path(dir) / name).string(), bytes);
    }
    return result.leaky() ? kExitFinding : kExitOk;
  });
}

int mixers_main(int argc, char** argv) {
  return guarded("mixers", [&]() -> int {
    po::options_description desc("mixers options");
    po::variables_map vm;
    if (!parse(argc, argv, desc, vm, "usage: grassaudit mixers")) return kExitOk;
    auto& reg = MixerRegistry::instance();
    // name, family, pairing, and the readable reference each fast mixer is tested against.
    std::cout << fmt::format("{:<18} {:<10} {:<12} {:<18} {}\n", "name", "family", "pairing", "reference", "summary");
    for (const auto& n : reg.names()) {
      const MixerInfo& m = reg.info(n);
      const std::string ref = m.is_reference ? "-" : m.reference_twin;
      std::cout << fmt::format("{:<18} {:<10} {:<12} {:<18} {}\n", n, family_name(m.family), pairing_name(m.pairing),
                               ref, m.summary);
    }
    return kExitOk;
  });
}

}  // namespace grassaudit::cli
