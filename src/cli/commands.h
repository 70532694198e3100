#pragma once
// One entry point per subcommand; each parses its own flags (argv[0] is the subcommand name).
namespace grassaudit::cli {
int audit_main(int argc, char** argv);
int train_main(int argc, char** argv);
int eval_main(int argc, char** argv);
int generate_main(int argc, char** argv);
int report_main(int argc, char** argv);
int bench_main(int argc, char** argv);
int mixers_main(int argc, char** argv);
int train_nli_main(int argc, char** argv);
int params_main(int argc, char** argv);
}  // namespace grassaudit::cli
