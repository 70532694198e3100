// grassaudit train: train a language model on WikiText-2 (audit gate before every perplexity).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "core/checkpoint.h"
#include "runtime/runtime.h"
#include "train/lm_data.h"
#include "train/presets.h"
#include "train/trainer.h"
#include "util/atomic_file.h"
#include "util/error.h"

namespace grassaudit::cli {
namespace {

// {"model": {...}, "train": {...}}; anything else is an error.
void apply_config_file(const std::string& path, ModelConfig& model, TrainConfig& train, bool* has_mixer,
                       bool* has_vocab) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_file(path));
  } catch (const nlohmann::json::exception& e) {
    std::string what = e.what();
    throw InputError(fmt::format("{}: not valid JSON ({})", path, what.substr(0, what.find('\n'))));
  }
  if (!j.is_object()) throw InputError(fmt::format("{}: must be a JSON object {{\"model\": ..., \"train\": ...}}", path));
  for (auto it = j.begin(); it != j.end(); ++it) {
    try {
      if (it.key() == "model") {
        model = model_config_from_json(it.value(), model);
        *has_mixer = it.value().contains("mixer");
        *has_vocab = it.value().contains("vocab_size");
      } else if (it.key() == "train") {
        train = train_config_from_json(it.value(), train);
      } else {
        throw InputError(fmt::format("unknown top-level key '{}' (expected \"model\" and \"train\")", it.key()));
      }
    } catch (const InputError& e) {
      throw InputError(fmt::format("{}: {}", path, e.what()));
    }
  }
}

}  // namespace

int train_main(int argc, char** argv) {
  return guarded("train", [&]() -> int {
    po::options_description desc("train options");
    int threads = 0;
    std::string mixer, preset, config, data_dir, out, resume, device, precision;
    double time_budget = 0, dist_timeout = 0;
    desc.add_options()
        ("mixer", po::value<std::string>(&mixer), "token mixer: future | past | attention (see grassaudit mixers)")
        ("preset", po::value<std::string>(&preset),
         fmt::format("settings preset: {}", fmt::join(preset_names(), " | ")).c_str())
        ("config", po::value<std::string>(&config), "JSON file {\"model\": {...}, \"train\": {...}} (instead of --preset)")
        ("data-dir", po::value<std::string>(&data_dir), "folder holding wikitext-2/ and bert-base-uncased/")
        ("out", po::value<std::string>(&out), "output folder (default: runs/<preset>-<tokenizer>-<mixer>)")
        ("resume", po::value<std::string>(&resume), "continue from a checkpoint (its config is used)")
        ("device", po::value<std::string>(&device)->default_value("cpu"), "cpu | cuda")
        ("precision", po::value<std::string>(&precision),
         "CUDA float32 math of the training steps: fp32 | tf32 | bf16 (default tf32 on cuda; cpu: fp32 only). "
         "Evaluation is IEEE float32 and the audit gate runs on an exact CPU copy whatever this says")
        ("time-budget", po::value<double>(&time_budget),
         "wall seconds for this session: training stops early enough for the closing audit and evaluations "
         "to finish inside it (the LR schedule still spans the planned epochs)")
        ("allow-other-data", "accept data files that differ from the published WikiText-2");
    add_config_flags(desc, train_config_fields());  // --tokenizer --epochs --seed --max-tokens --audit-trials --loss-impl
    add_threads_option(desc, &threads);
    add_dist_timeout_option(desc, &dist_timeout);
    add_model_options(desc);
    po::variables_map vm;
    const std::string usage =
        "usage: grassaudit train --mixer NAME --preset NAME|--config FILE [--data-dir DIR] [--tokenizer word|wordpiece]\n"
        "                        [--epochs E] [--max-tokens N] [--out DIR] [--resume CKPT] [--seed S] [--threads T]\n"
        "                        [--device cpu|cuda] [--precision fp32|tf32|bf16] [--loss-impl fused|materialized]\n"
        "                        [--time-budget SECONDS] [--dist-timeout SECONDS]\n"
        "                        [model flags]\n" +
        data_parallel_usage("train", " (--redirects 1 --tee 1: Debian's torch 1.13 launcher under Python 3.11)\n"
                                     "  (--batch stays the global batch; rank 0 writes every file)");
    if (!parse(argc, argv, desc, vm, usage)) return kExitOk;

    TrainRequest req;
    req.data_dir = data_dir;
    req.cache_dir = default_cache_dir();
    req.allow_other_data = vm.count("allow-other-data") > 0;
    req.device = device;
    if (device != "cpu" && device != "cuda") throw InputError(fmt::format("--device must be cpu or cuda, got '{}'", device));
    req.precision = resolve_cuda_precision(
        vm.count("precision") ? std::optional<std::string>(precision) : std::nullopt, device);
    if (vm.count("time-budget")) {
      if (!(time_budget > 0) || !std::isfinite(time_budget))
        throw InputError(fmt::format("--time-budget must be a positive number of seconds, got {}", time_budget));
      req.time_budget_seconds = time_budget;
    }

    if (vm.count("resume")) {
      // The checkpoint's config is used: every config flag is refused rather than ignored, but
      // --max-tokens and --loss-impl (the same function, only rounded differently).
      std::vector<std::string> refused{"mixer", "preset", "config"};
      for (const auto& flag : config_flag_names(train_config_fields()))
        if (flag != "max-tokens" && flag != "loss-impl") refused.push_back(flag);
      for (const auto& flag : config_flag_names(model_config_fields())) refused.push_back(flag);
      refuse_with_resume(vm, refused, "config is");
      req.resume = resume;  // run_training loads it before any output: a bad file is one line
      if (vm.count("max-tokens")) {
        const int64_t max_tokens = vm["max-tokens"].as<int64_t>();
        if (max_tokens < 0) throw InputError("--max-tokens must be >= 0");
        req.max_tokens_override = max_tokens;
      }
      if (vm.count("loss-impl")) {
        TrainConfig check;
        apply_config_flags(vm, train_config_fields(), check);
        check.validate(ModelConfig{});
        req.loss_impl_override = check.loss_impl;
      }
      req.out_dir = vm.count("out") ? out : default_resume_out_dir(resume);
    } else {
      if (vm.count("preset") == vm.count("config"))
        throw InputError("give exactly one of --preset NAME or --config FILE");
      bool has_mixer = false, has_vocab = false;
      if (vm.count("preset")) {
        Preset p = get_preset(preset);
        req.model = p.model;
        req.train = p.train;
        req.preset = p.name;
      } else {
        apply_config_file(config, req.model, req.train, &has_mixer, &has_vocab);
        req.preset = "config:" + config;
      }
      if (vm.count("mixer")) req.model.mixer = mixer;
      else if (!has_mixer) throw InputError("--mixer is required (future, past or attention)");
      req.model = model_config_from_flags(vm, req.model);
      req.vocab_size_explicit = has_vocab || vm.count("vocab-size") > 0;
      apply_config_flags(vm, train_config_fields(), req.train);
      // Cheap checks before the data is loaded (vocab_size is validated once it is known).
      req.model.validate();
      req.train.validate(req.model);
      const std::string name = vm.count("preset") ? preset : "config";
      req.out_dir = vm.count("out") ? out : fmt::format("runs/{}-{}-{}", name, req.train.tokenizer, req.model.mixer);
    }
    if (req.out_dir.empty()) throw InputError("--out must not be empty");

    configure_threads(threads);
    req.print_banner = true;
    req.dist_timeout_seconds = dist_timeout;
    run_training(req);  // a signal also ends with exit 0 (checkpoint saved, message printed)
    return kExitOk;
  });
}

}  // namespace grassaudit::cli
