// Subcommands whose implementation lands in its own file; until then they say so and exit 2.
// Weak symbols: the real definitions (cmd_train.cpp, ...) replace these at link time.
#include <iostream>

#include "cli/commands.h"
#include "util/error.h"

namespace grassaudit::cli {
namespace {
int pending(const char* name) {
  std::cerr << "grassaudit " << name << ": error: not available in this build\n";
  return kExitUsage;
}
}  // namespace
__attribute__((weak)) int train_main(int, char**) { return pending("train"); }
__attribute__((weak)) int eval_main(int, char**) { return pending("eval"); }
__attribute__((weak)) int bench_main(int, char**) { return pending("bench"); }
__attribute__((weak)) int train_nli_main(int, char**) { return pending("train-nli"); }
}  // namespace grassaudit::cli
