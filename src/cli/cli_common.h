#pragma once
// Shared CLI plumbing: strict option parsing (unknown flags and bad values are errors, exit 2,
// one line), --help for every subcommand, thread setup, and the config flags (generated from
// each config's field table, util/config_fields.h).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "core/model_config.h"
#include "util/config_fields.h"

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
// --dist-timeout SECONDS: data-parallel runs (torchrun) only; the c10d timeout of every collective.
void add_dist_timeout_option(po::options_description& desc, double* seconds);
// The usage lines on starting `command` data-parallel: torchrun's command line (one launcher
// for every command), then `after` (what the command adds about its ranks).
std::string data_parallel_usage(const std::string& command, const std::string& after);

// Config flags from a field table: one --flag per field that names one, typed by the field
// (integers and reals as boost reads them, so "256.5" for an integer flag is an error; seeds
// as Unsigned64; integer lists as "1,2,4" text, parse_int_list). apply_config_flags sets the
// fields whose flags were given and leaves the others as they are.
void add_config_flag(po::options_description& desc, const FieldInfo& field);
// The same with the field's default shown in --help ("--batch arg (=32)"): given or not, the flag
// then holds a value, the default where it was not given.
void add_config_flag(po::options_description& desc, const FieldInfo& field, ConstFieldRef shown_default);
void apply_config_flag(const po::variable_value& value, const FieldInfo& field, FieldRef target);

template <class Config>
void add_config_flags(po::options_description& desc, const std::vector<Field<Config>>& fields) {
  for (const auto& f : fields)
    if (!f.flag.empty()) add_config_flag(desc, f);
}

template <class Config>
void add_config_flags(po::options_description& desc, const std::vector<Field<Config>>& fields, const Config& defaults) {
  for (const auto& f : fields)
    if (!f.flag.empty()) add_config_flag(desc, f, f.ref(defaults));
}

template <class Config>
void apply_config_flags(const po::variables_map& vm, const std::vector<Field<Config>>& fields, Config& config) {
  for (const auto& f : fields)
    if (!f.flag.empty() && vm.count(f.flag)) apply_config_flag(vm[f.flag], f, f.ref(config));
}

// The flags of a table (without "--"), e.g. to refuse them with --resume.
template <class Config>
std::vector<std::string> config_flag_names(const std::vector<Field<Config>>& fields) {
  std::vector<std::string> names;
  for (const auto& f : fields)
    if (!f.flag.empty()) names.push_back(f.flag);
  return names;
}

// Model flags (model_config_fields): --vocab-size --d-model --rank --layers --max-len --heads
// --d-ff --dropout --eps --offsets --offset-mode. Values given on the command line override `base`.
void add_model_options(po::options_description& desc);
ModelConfig model_config_from_flags(const po::variables_map& vm, ModelConfig base);

// With --resume the checkpoint's settings are used: each flag in `refused` that was given is an
// InputError "--F cannot be combined with --resume (the checkpoint's <what> used)".
void refuse_with_resume(const po::variables_map& vm, const std::vector<std::string>& refused, const std::string& what);

// Prints the runtime banner (threads, parallel info, BLAS) to stderr.
void print_runtime_banner();

}  // namespace grassaudit::cli
