// grassaudit train-nli: SNLI with the Grassmann-Pluecker head or the Transformer head on a shared
// encoder trained from scratch (nli/nli_model.h, nli/nli_trainer.h).
#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <sstream>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "core/runtime.h"
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
    std::string head, data_dir, train_file, seeds_text, out, resume;
    int64_t epochs = 0, batch = 0, max_examples = 0, encoder_layers = 0, log_every = 0;
    Unsigned64 seed;
    double lr = 0;
    desc.add_options()
        ("head", po::value<std::string>(&head), "classification head: grassmann | transformer")
        ("data-dir", po::value<std::string>(&data_dir), "folder holding snli/ and bert-base-uncased/")
        ("train", po::value<std::string>(&train_file),
         "SNLI training split (jsonl or jsonl.gz); without it: train on 90% of dev, select on 10%, test on test")
        ("epochs", po::value<int64_t>(&epochs), "epochs (default 2, the budget setting; the paper: 20)")
        ("seed", po::value<Unsigned64>(&seed), "one seed (same as --seeds S)")
        ("seeds", po::value<std::string>(&seeds_text), "comma-separated seeds, run one after another (default 1,2,3)")
        ("batch", po::value<int64_t>(&batch), "batch size (default 32)")
        ("lr", po::value<double>(&lr), "peak learning rate (default 1e-3; warmup 10%, cosine to 10%)")
        ("out", po::value<std::string>(&out), "output folder (default: runs/snli-<head>)")
        ("resume", po::value<std::string>(&resume), "continue from a checkpoint (its settings, seeds and data are used)")
        ("max-examples", po::value<int64_t>(&max_examples), "keep the first N pairs of every split (smoke runs)")
        ("encoder-layers", po::value<int64_t>(&encoder_layers), "self-attention layers in the shared encoder (default 1)")
        ("log-every", po::value<int64_t>(&log_every), "a train metrics line every k steps (default 50)");
    add_threads_option(desc, &threads);
    po::variables_map vm;
    const std::string usage =
        "usage: grassaudit train-nli --head grassmann|transformer [--data-dir DIR] [--train FILE] [--epochs E]\n"
        "                            [--seed S | --seeds 1,2,3] [--batch B] [--lr LR] [--out DIR] [--resume CKPT]\n"
        "                            [--threads T] [--max-examples N]";
    if (!parse(argc, argv, desc, vm, usage)) return kExitOk;

    NliTrainRequest req;
    req.data_dir = data_dir;
    if (vm.count("resume")) {
      for (const char* flag : {"head", "train", "epochs", "seed", "seeds", "batch", "lr", "max-examples",
                               "encoder-layers", "log-every"})
        if (vm.count(flag))
          throw InputError(fmt::format("--{} cannot be combined with --resume (the checkpoint's settings are used)", flag));
      req.resume = resume;  // the trainer loads it before any output: a bad file is one line
      req.out_dir = vm.count("out") ? out : default_resume_out_dir(resume);
    } else {
      if (!vm.count("head")) throw InputError("--head is required (grassmann or transformer)");
      if (head != "grassmann" && head != "transformer")
        throw InputError(fmt::format("--head must be grassmann or transformer, got '{}'", head));
      req.model.head = head;
      if (vm.count("seed") && vm.count("seeds")) throw InputError("give --seed or --seeds, not both");
      if (vm.count("seed")) req.seeds = {seed.value};
      if (vm.count("seeds")) req.seeds = parse_seed_list(seeds_text);
      if (vm.count("train")) {
        if (train_file.empty()) throw InputError("--train must not be empty");
        req.train_file = train_file;
      }
      if (vm.count("epochs")) req.train.epochs = epochs;
      if (vm.count("batch")) req.train.batch = batch;
      if (vm.count("lr")) req.train.lr = lr;
      if (vm.count("max-examples")) req.train.max_examples = max_examples;
      if (vm.count("log-every")) req.train.log_every = log_every;
      if (vm.count("encoder-layers")) req.model.encoder_layers = encoder_layers;
      req.train.validate();
      req.model.vocab_rows = 4;  // set from the data later; only the other fields are checked here
      req.model.validate();
      req.out_dir = vm.count("out") ? out : fmt::format("runs/snli-{}", head);
    }
    if (req.out_dir.empty()) throw InputError("--out must not be empty");

    configure_threads(threads);
    run_nli_training(req);  // prints the runtime banner once the data are read  // a signal also ends with exit 0 (checkpoint saved, message printed)
    return kExitOk;
  });
}

}  // namespace grassaudit::cli
