#pragma once
// Shared CLI plumbing: strict option parsing (unknown flags and bad values are errors, exit 2,
// one line), --help for every subcommand, thread setup, and the model flags.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "core/model_config.h"

namespace grassaudit::cli {

namespace po = boost::program_options;

// Runs `body`, turning InputError / option errors into "grassaudit <sub>: error: ..." + exit 2.
int guarded(const std::string& subcommand, const std::function<int()>& body);

// Parses argv (argv[0] is the subcommand). Returns false after printing help for --help.
// Rejects unknown options and positional arguments.
bool parse(int argc, char** argv, const po::options_description& desc, po::variables_map& vm,
           const std::string& usage);

// A 64-bit unsigned flag value (seeds). boost::program_options would read "-1" into a uint64_t
// as 18446744073709551615; this accepts digits only.
struct Unsigned64 {
  uint64_t value = 0;
};
void validate(boost::any& v, const std::vector<std::string>& values, Unsigned64*, int);

// --threads N (default: all cores; negative is an error). Call configure_threads(value) after
// parsing.
void add_threads_option(po::options_description& desc, int* threads);

// Model flags: --vocab-size --d-model --rank --layers --max-len --heads --d-ff --dropout --eps
// --offsets --offset-mode. Values given on the command line override `base`.
void add_model_options(po::options_description& desc);
ModelConfig model_config_from_flags(const po::variables_map& vm, ModelConfig base);

// Prints the runtime banner (threads, parallel info, BLAS) to stderr.
void print_runtime_banner();

}  // namespace grassaudit::cli
