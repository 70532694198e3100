#include "cli/cli_common.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include <c10/util/Exception.h>

#include <iostream>

#include "runtime/distributed.h"
#include "runtime/runtime.h"
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

void add_dist_timeout_option(po::options_description& desc, double* seconds) {
  desc.add_options()(
      "dist-timeout",
      po::value<double>(seconds)->default_value(dist::kDefaultTimeoutSeconds)->notifier([](double s) {
        if (!(s > 0) || !std::isfinite(s))
          throw InputError(fmt::format("--dist-timeout must be a positive number of seconds, got {}", s));
      }),
      "data-parallel runs started by torchrun (env:// variables RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT): the c10d "
      "timeout in seconds. A rank that dies or hangs makes the others exit non-zero within it, with one line naming "
      "the lost rank; the store connection at start-up waits as long");
}

std::string data_parallel_usage(const std::string& command, const std::string& after) {
  return "Data-parallel: python3 -m torch.distributed.run --redirects 1 --tee 1 --no_python --nproc_per_node N \\\n"
         "  grassaudit " + command + " ..." + after;
}

void add_config_flag(po::options_description& desc, const FieldInfo& field) {
  const char* name = field.flag.c_str();
  const char* help = field.help.c_str();
  switch (field.kind) {
    case FieldKind::kInt: desc.add_options()(name, po::value<int64_t>(), help); break;
    case FieldKind::kUnsigned: desc.add_options()(name, po::value<Unsigned64>(), help); break;
    case FieldKind::kReal: desc.add_options()(name, po::value<double>(), help); break;
    case FieldKind::kText:
    case FieldKind::kIntList: desc.add_options()(name, po::value<std::string>(), help); break;
    case FieldKind::kSwitch: desc.add_options()(name, po::bool_switch(), help); break;
    case FieldKind::kOptionalInt: desc.add_options()(name, po::value<int64_t>(), help); break;
  }
}

void add_config_flag(po::options_description& desc, const FieldInfo& field, ConstFieldRef shown_default) {
  const char* name = field.flag.c_str();
  const char* help = field.help.c_str();
  struct Visitor {
    po::options_description& desc;
    const char* name;
    const char* help;
    void operator()(const int64_t* v) const { desc.add_options()(name, po::value<int64_t>()->default_value(*v), help); }
    void operator()(const uint64_t* v) const {
      desc.add_options()(name, po::value<Unsigned64>()->default_value(Unsigned64{*v}, std::to_string(*v)), help);
    }
    void operator()(const double* v) const { desc.add_options()(name, po::value<double>()->default_value(*v), help); }
    void operator()(const std::string* v) const {
      desc.add_options()(name, po::value<std::string>()->default_value(*v), help);
    }
    void operator()(const std::vector<int64_t>* v) const {
      if (v->empty()) {
        desc.add_options()(name, po::value<std::string>(), help);
        return;
      }
      std::string text;
      for (int64_t x : *v) text += (text.empty() ? "" : ",") + std::to_string(x);
      desc.add_options()(name, po::value<std::string>()->default_value(text), help);
    }
    void operator()(const bool*) const { desc.add_options()(name, po::bool_switch(), help); }
    void operator()(const std::optional<int64_t>*) const { desc.add_options()(name, po::value<int64_t>(), help); }
  };
  std::visit(Visitor{desc, name, help}, shown_default);
}

void apply_config_flag(const po::variable_value& value, const FieldInfo& field, FieldRef target) {
  struct Visitor {
    const po::variable_value& v;
    const FieldInfo& f;
    void operator()(int64_t* out) const { *out = v.as<int64_t>(); }
    void operator()(uint64_t* out) const { *out = v.as<Unsigned64>().value; }
    void operator()(double* out) const { *out = v.as<double>(); }
    void operator()(std::string* out) const { *out = v.as<std::string>(); }
    void operator()(std::vector<int64_t>* out) const { *out = parse_int_list(v.as<std::string>(), "--" + f.flag); }
    void operator()(bool* out) const {
      if (v.as<bool>()) *out = f.switch_sets;  // a switch not given leaves the field as it is
    }
    void operator()(std::optional<int64_t>* out) const { *out = v.as<int64_t>(); }
  };
  std::visit(Visitor{value, field}, target);
}

void add_model_options(po::options_description& desc) { add_config_flags(desc, model_config_fields()); }

ModelConfig model_config_from_flags(const po::variables_map& vm, ModelConfig c) {
  apply_config_flags(vm, model_config_fields(), c);
  return c;
}

void refuse_with_resume(const po::variables_map& vm, const std::vector<std::string>& refused, const std::string& what) {
  for (const auto& flag : refused)
    if (vm.count(flag))
      throw InputError(fmt::format("--{} cannot be combined with --resume (the checkpoint's {} used)", flag, what));
}

void print_runtime_banner() { std::cerr << runtime_banner(); }

}  // namespace grassaudit::cli
