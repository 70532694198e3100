// grassaudit: reproducibility and causality audit harness for attention-free sequence models.
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "runtime/cpu_features.h"
#include "runtime/runtime.h"
#include "util/command_line.h"
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
      {"generate", "generate text from a checkpoint (audit gate first; incremental path)", generate_main},
      {"train-nli", "train an SNLI classification head (Grassmann-Pluecker or Transformer)", train_nli_main},
      {"report", "regenerate the comparison report from committed artifacts", report_main},
      {"bench", "benchmark a mixer layer or a whole-model training step", bench_main},
      {"mixers", "list the registered token mixers", mixers_main},
      {"params", "parameter counts of the paper's configurations", params_main},
  };
  return list;
}

// LibTorch's OpenMP workers spin after every parallel region, and OpenBLAS (pthread build) runs
// its own workers inside each GEMM: with --threads N on N cores, a spinning OpenMP worker holds
// the core an OpenBLAS worker needs. Measured on the 2-core development machine, --threads 2,
// paper-6l-L128, same binary: training 1,315-1,338 -> 1,884-1,938 tokens/s (past), one audit
// pass 7.8 s (slower than 1 thread: 5.4 s) -> 3.5-3.9 s, with OMP_WAIT_POLICY=PASSIVE.
// libgomp reads that variable once, in its constructor, before main() runs (a setenv from the
// executable's .preinit_array is undone by libc's own start-up), so the compute commands
// re-execute themselves once with it set. A user's own OMP_WAIT_POLICY or GOMP_SPINCOUNT wins;
// if the exec fails the command runs on with spinning workers (slower, not different).
//
// The same exec selects OpenBLAS's kernel family when its own detection fell below what the CPU
// can run (runtime/cpu_features.h): OpenBLAS reads OPENBLAS_CORETYPE once, when it loads, so only a
// fresh process can change it. Measured on the 2-core AMD EPYC (AVX-512 + BF16) development
// machine, 2 threads, same process image: OpenBLAS 0.3.21 picks Haswell, sgemm 1024^3 243-246
// GFLOP/s; with SkylakeX/Cooperlake kernels 451-456 (the head's [4096,256]x[256,30522]: 228-237
// vs 429-436). A user's own OPENBLAS_CORETYPE wins.
//
// The same exec makes OpenBLAS's idle workers sleep at once (OPENBLAS_THREAD_TIMEOUT=4: 2^4
// cycles, its least) instead of calling sched_yield for 2^28 cycles after every GEMM: between
// the small GEMMs of an audit they held the core the OpenMP worker needed. Measured on the 2-core
// AMD EPYC, processes alternated, six pairs: README command 1's future audit 1.05x faster
// (median), system time 3.7 -> 1.3 s; paper-6l-L128 training steps no slower (2,139 / 2,084 vs
// 2,190 / 2,178 ms). Read when OpenBLAS loads; a user's own value wins.
void prepare_runtime_and_reexec(char** argv) {
  bool set_omp = false, set_core = false, set_timeout = false;
  if (std::getenv("OMP_WAIT_POLICY") == nullptr && std::getenv("GOMP_SPINCOUNT") == nullptr) {
    ::setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
    set_omp = true;
  }
  if (set_omp && std::getenv("OPENBLAS_THREAD_TIMEOUT") == nullptr) {
    ::setenv("OPENBLAS_THREAD_TIMEOUT", "4", 1);
    set_timeout = true;
  }
  if (std::getenv("OPENBLAS_CORETYPE") == nullptr) {
    const std::string reported = grassaudit::blas_core();
    if (auto core = grassaudit::openblas_core_upgrade(reported, grassaudit::detect_cpu_features())) {
      ::setenv("OPENBLAS_CORETYPE", core->c_str(), 1);
      ::setenv("GRASSAUDIT_OPENBLAS_CORE_FROM", reported.c_str(), 1);
      set_core = true;
    }
  }
  if (!set_omp && !set_core) return;
  ::execv("/proc/self/exe", argv);
  // exec failed: run on as we are, and say so in the banner by unsetting what we set
  if (set_omp) ::unsetenv("OMP_WAIT_POLICY");
  if (set_timeout) ::unsetenv("OPENBLAS_THREAD_TIMEOUT");
  if (set_core) {
    ::unsetenv("OPENBLAS_CORETYPE");
    ::unsetenv("GRASSAUDIT_OPENBLAS_CORE_FROM");
  }
}

bool is_compute_command(const std::string& name) {
  return name == "train" || name == "eval" || name == "audit" || name == "bench" || name == "train-nli" ||
         name == "generate";
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
  if (is_compute_command(name)) prepare_runtime_and_reexec(argv);
  grassaudit::set_command_line(argc, argv);
  for (const auto& c : commands())
    if (name == c.name) return c.run(argc - 1, argv + 1);
  std::cerr << "grassaudit: error: unknown command '" << name << "' (see grassaudit --help)\n";
  return grassaudit::kExitUsage;
}
