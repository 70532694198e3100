// grassaudit: reproducibility and causality audit harness for attention-free sequence models.
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "util/error.h"

namespace {

struct Command {
  const char* name;
  const char* summary;
  int (*run)(int, char**);
};

const std::vector<Command>& commands() {
  using namespace grassaudit::cli;
  static const std::vector<Command> list{
      {"audit", "causality audit of a built-in mixer, a checkpoint, a TorchScript model or a suite", audit_main},
      {"train", "train a language model on WikiText-2 (audit gate before every perplexity)", train_main},
      {"eval", "evaluate a checkpoint (audit gate first)", eval_main},
      {"train-nli", "train an SNLI classification head (Grassmann-Pluecker or Transformer)", train_nli_main},
      {"report", "regenerate the comparison report from committed artifacts", report_main},
      {"bench", "benchmark a mixer layer or a whole-model training step", bench_main},
      {"mixers", "list the registered token mixers", mixers_main},
      {"params", "parameter counts of the paper's configurations", params_main},
  };
  return list;
}

void usage(std::ostream& out) {
  out << "usage: grassaudit <command> [options]   (grassaudit <command> --help)\n\ncommands:\n";
  for (const auto& c : commands()) out << "  " << c.name << std::string(12 - std::strlen(c.name), ' ') << c.summary << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    usage(std::cerr);
    return grassaudit::kExitUsage;
  }
  std::string name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    usage(std::cout);
    return 0;
  }
  for (const auto& c : commands())
    if (name == c.name) return c.run(argc - 1, argv + 1);
  std::cerr << "grassaudit: error: unknown command '" << name << "' (see grassaudit --help)\n";
  return grassaudit::kExitUsage;
}
