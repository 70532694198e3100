#include "cli/cli_common.h"

#include <cerrno>
#include <cstdlib>

#include <fmt/format.h>

#include <c10/util/Exception.h>

#include <iostream>

#include "core/runtime.h"
#include "util/error.h"

namespace grassaudit::cli {

int guarded(const std::string& subcommand, const std::function<int()>& body) {
  auto fail = [&](const std::string& what) {
    std::string line = what.substr(0, what.find('\n'));
    std::cerr << fmt::format("grassaudit {}: error: {}", subcommand, line) << std::endl;
    return kExitUsage;
  };
  try {
    return body();
  } catch (const InputError& e) {
    return fail(e.what());
  } catch (const po::error& e) {
    return fail(std::string(e.what()) + " (see --help)");
  } catch (const c10::Error& e) {
    return fail(std::string("LibTorch: ") + e.what_without_backtrace());
  } catch (const std::bad_alloc&) {
    return fail("out of memory");
  } catch (const std::exception& e) {
    return fail(e.what());
  }
}

bool parse(int argc, char** argv, const po::options_description& desc, po::variables_map& vm,
           const std::string& usage) {
  po::options_description all;
  all.add(desc);
  all.add_options()("help,h", "show this help");
  // No positional arguments: a stray word is an error, not silently ignored.
  po::positional_options_description none;
  po::store(po::command_line_parser(argc, argv).options(all).positional(none).run(), vm);  // skips argv[0]
  if (vm.count("help")) {
    std::cout << usage << "\n\n" << all << std::endl;
    return false;
  }
  po::notify(vm);
  return true;
}

void validate(boost::any& v, const std::vector<std::string>& values, Unsigned64*, int) {
  po::validators::check_first_occurrence(v);
  const std::string& s = po::validators::get_single_string(values);
  const bool digits = !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
  if (!digits) throw po::invalid_option_value(s);
  errno = 0;
  char* end = nullptr;
  const unsigned long long n = std::strtoull(s.c_str(), &end, 10);
  if (errno == ERANGE || *end != '\0') throw po::invalid_option_value(s);
  v = Unsigned64{static_cast<uint64_t>(n)};
}

void add_threads_option(po::options_description& desc, int* threads) {
  desc.add_options()("threads",
                     po::value<int>(threads)->default_value(0)->notifier([](int n) {
                       if (n < 0) throw InputError(fmt::format("--threads must be >= 0 (0 = all cores), got {}", n));
                     }),
                     "intra-op threads (0 = all cores)");
}

void add_model_options(po::options_description& desc) {
  desc.add_options()
      ("vocab-size", po::value<int64_t>(), "vocabulary size V")
      ("d-model", po::value<int64_t>(), "model width d")
      ("rank", po::value<int64_t>(), "Grassmann reduced rank r (>= 2)")
      ("layers", po::value<int64_t>(), "number of blocks N")
      ("max-len", po::value<int64_t>(), "position table size L_max (train: also the block length L)")
      ("heads", po::value<int64_t>(), "attention heads")
      ("d-ff", po::value<int64_t>(), "feed-forward width")
      ("dropout", po::value<double>(), "dropout rate")
      ("eps", po::value<double>(), "Pluecker normalisation floor")
      ("offsets", po::value<std::string>(), "pairing offsets, e.g. 1,2,4,8,12,16")
      ("offset-mode", po::value<std::string>(), "per-layer | all");
}

ModelConfig model_config_from_flags(const po::variables_map& vm, ModelConfig c) {
  if (vm.count("vocab-size")) c.vocab_size = vm["vocab-size"].as<int64_t>();
  if (vm.count("d-model")) c.d_model = vm["d-model"].as<int64_t>();
  if (vm.count("rank")) c.rank = vm["rank"].as<int64_t>();
  if (vm.count("layers")) c.layers = vm["layers"].as<int64_t>();
  if (vm.count("max-len")) c.max_len = vm["max-len"].as<int64_t>();
  if (vm.count("heads")) c.heads = vm["heads"].as<int64_t>();
  if (vm.count("d-ff")) c.d_ff = vm["d-ff"].as<int64_t>();
  if (vm.count("dropout")) c.dropout = vm["dropout"].as<double>();
  if (vm.count("eps")) c.eps = vm["eps"].as<double>();
  if (vm.count("offsets")) c.offsets = parse_int_list(vm["offsets"].as<std::string>(), "--offsets");
  if (vm.count("offset-mode")) c.offset_mode = vm["offset-mode"].as<std::string>();
  return c;
}

void print_runtime_banner() { std::cerr << runtime_banner(); }

}  // namespace grassaudit::cli
