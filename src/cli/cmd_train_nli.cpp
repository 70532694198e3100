// grassaudit train-nli: SNLI with the Grassmann-Pluecker head or the Transformer head on a shared
// encoder trained from scratch (nli/nli_model.h, nli/nli_trainer.h).
#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <sstream>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "runtime/runtime.h"
#include "nli/nli_checkpoint.h"
#include "nli/nli_trainer.h"
#include "train/trainer.h"
#include "util/error.h"

namespace grassaudit::cli {
namespace {

std::vector<uint64_t> parse_seed_list(const std::string& text) {
  std::vector<uint64_t> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty() || item.find_first_not_of("0123456789") != std::string::npos)
      throw InputError(fmt::format("--seeds must be a comma-separated list of non-negative integers, got '{}'", text));
    try {
      out.push_back(std::stoull(item));
    } catch (const std::exception&) {
      throw InputError(fmt::format("--seeds: '{}' is out of range", item));
    }
  }
  if (out.empty()) throw InputError("--seeds must name at least one seed");
  for (size_t i = 0; i < out.size(); ++i)
    for (size_t j = i + 1; j < out.size(); ++j)
      if (out[i] == out[j]) throw InputError(fmt::format("--seeds lists seed {} twice", out[i]));
  return out;
}

}  // namespace

int train_nli_main(int argc, char** argv) {
  return guarded("train-nli", [&]() -> int {
    po::options_description desc("train-nli options");
    int threads = 0;
    std::string data_dir, train_file, seeds_text, out, resume;
    Unsigned64 seed;
    add_config_flags(desc, nli_config_fields());        // --head --encoder-layers
    add_config_flags(desc, nli_train_config_fields());  // --epochs --batch --lr --log-every --max-examples
    desc.add_options()
        ("data-dir", po::value<std::string>(&data_dir), "folder holding snli/ and bert-base-uncased/")
        ("train", po::value<std::string>(&train_file),
         "SNLI training split (jsonl or jsonl.gz); without it: train on 90% of dev, select on 10%, test on test")
        ("seed", po::value<Unsigned64>(&seed), "one seed (same as --seeds S)")
        ("seeds", po::value<std::string>(&seeds_text), "comma-separated seeds, run one after another (default 1,2,3)")
        ("out", po::value<std::string>(&out), "output folder (default: runs/snli-<head>)")
        ("resume", po::value<std::string>(&resume), "continue from a checkpoint (its settings, seeds and data are used)");
    add_threads_option(desc, &threads);
    double dist_timeout = 0;
    add_dist_timeout_option(desc, &dist_timeout);
    po::variables_map vm;
    const std::string usage =
        "usage: grassaudit train-nli --head grassmann|transformer [--data-dir DIR] [--train FILE] [--epochs E]\n"
        "                            [--seed S | --seeds 1,2,3] [--batch B] [--lr LR] [--out DIR] [--resume CKPT]\n"
        "                            [--threads T] [--max-examples N] [--dist-timeout SECONDS]\n" +
        data_parallel_usage("train-nli", " (--batch stays the global batch; rank 0 writes every file)");
    if (!parse(argc, argv, desc, vm, usage)) return kExitOk;

    NliTrainRequest req;
    req.data_dir = data_dir;
    if (vm.count("resume")) {
      // The checkpoint's settings are used: every settings flag is refused rather than ignored.
      std::vector<std::string> refused{"train", "seed", "seeds"};
      for (const auto& flag : config_flag_names(nli_config_fields())) refused.push_back(flag);
      for (const auto& flag : config_flag_names(nli_train_config_fields())) refused.push_back(flag);
      refuse_with_resume(vm, refused, "settings are");
      req.resume = resume;  // the trainer loads it before any output: a bad file is one line
      req.out_dir = vm.count("out") ? out : default_resume_out_dir(resume);
    } else {
      if (!vm.count("head")) throw InputError("--head is required (grassmann or transformer)");
      apply_config_flags(vm, nli_config_fields(), req.model);
      apply_config_flags(vm, nli_train_config_fields(), req.train);
      req.model.vocab_rows = 4;  // set from the data later; only the other fields are checked here
      req.model.validate();
      req.train.validate();
      if (vm.count("seed") && vm.count("seeds")) throw InputError("give --seed or --seeds, not both");
      if (vm.count("seed")) req.seeds = {seed.value};
      if (vm.count("seeds")) req.seeds = parse_seed_list(seeds_text);
      if (vm.count("train")) {
        if (train_file.empty()) throw InputError("--train must not be empty");
        req.train_file = train_file;
      }
      req.out_dir = vm.count("out") ? out : fmt::format("runs/snli-{}", req.model.head);
    }
    if (req.out_dir.empty()) throw InputError("--out must not be empty");

    configure_threads(threads);
    req.dist_timeout_seconds = dist_timeout;
    run_nli_training(req);  // prints the runtime banner once the data are read  // a signal also ends with exit 0 (checkpoint saved, message printed)
    return kExitOk;
  });
}

}  // namespace grassaudit::cli
