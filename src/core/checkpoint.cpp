#include "core/checkpoint.h"

#include "runtime/pickle_guard.h"

#include "runtime/rng_guard.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <type_traits>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sstream>
#include <torch/optim/adamw.h>
#include <torch/optim/optimizer.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include "util/atomic_file.h"
#include "util/error.h"
#include "util/error_text.h"
#include "util/sha256.h"

namespace grassaudit {
namespace {
constexpr const char* kMagic = "grassaudit-checkpoint-v1";
constexpr const char* kKind = "grassaudit checkpoint";
constexpr const char* kWeightsKey = "stored_weights_sha256";
}

void save_training_archive(const std::string& path, const std::string& magic, const nlohmann::json& meta,
                           torch::nn::Module& module, torch::optim::Optimizer* optimizer) {
  nlohmann::json stored = meta;
  stored[kWeightsKey] = weights_sha256(module);
  torch::serialize::OutputArchive archive;
  archive.write("magic", c10::IValue(magic));
  archive.write("meta", c10::IValue(stored.dump()));
  torch::serialize::OutputArchive model_archive;
  module.save(model_archive);
  archive.write("model", model_archive);
  if (optimizer) {
    torch::serialize::OutputArchive opt_archive;
    optimizer->save(opt_archive);
    archive.write("optimizer", opt_archive);
  }
  archive.write("rng_state", at::detail::getDefaultCPUGenerator().get_state());
  write_file_atomic_with(path, [&](const std::string& tmp) {
    FILE* f = std::fopen(tmp.c_str(), "wb");
    if (!f) throw InputError(fmt::format("cannot write checkpoint {}: {}", path, std::strerror(errno)));
    // Never report a short write back to LibTorch: PyTorchStreamWriter then throws from inside a
    // miniz callback and again from its destructor, which ends in std::terminate (a full disk
    // would abort the trainer). The first error is kept and reported once the archive is done.
    int err = 0;
    auto sink = [&](const void* data, size_t n) -> size_t {
      if (err == 0 && n > 0 && std::fwrite(data, 1, n, f) != n) err = errno ? errno : EIO;
      return n;
    };
    try {
      archive.save_to(sink);
    } catch (const c10::Error& e) {
      std::fclose(f);
      std::string what = e.what_without_backtrace();
      throw InputError(fmt::format("cannot write checkpoint {}: {}", path, what.substr(0, what.find('\n'))));
    }
    if (std::fflush(f) != 0 && err == 0) err = errno;
    if (std::fclose(f) != 0 && err == 0) err = errno;
    if (err != 0) throw InputError(fmt::format("cannot write checkpoint {}: {}", path, std::strerror(err)));
  });
}

void save_checkpoint(const std::string& path, LanguageModel& model, torch::optim::Optimizer* optimizer,
                     const nlohmann::json& meta_in) {
  nlohmann::json meta = meta_in;
  meta["model"] = to_json(model->config());
  save_training_archive(path, kMagic, meta, *model, optimizer);
}

namespace {

// Submodules renamed since checkpoints were first written: older archives store the module
// registered as `current` under `legacy` (grassmann_mixer.cpp: "plucker" -> "pluecker", so the
// key blocks.N.mixer.plucker.weight is now blocks.N.mixer.pluecker.weight).
struct RenamedModule {
  const char* current;
  const char* legacy;
};
constexpr RenamedModule kRenamedModules[] = {{"pluecker", "plucker"}};

const char* legacy_name(const std::string& current) {
  for (const auto& r : kRenamedModules)
    if (current == r.current) return r.legacy;
  return nullptr;
}

// A module key ("blocks.0.mixer.pluecker.weight") as the code before the renames wrote it.
std::string legacy_key(const std::string& key) {
  std::string out;
  size_t pos = 0;
  while (pos <= key.size()) {
    const size_t dot = key.find('.', pos);
    const std::string part = key.substr(pos, dot == std::string::npos ? std::string::npos : dot - pos);
    const char* old = legacy_name(part);
    out += old ? old : part;
    if (dot == std::string::npos) break;
    out += '.';
    pos = dot + 1;
  }
  return out;
}

// Module::load (parameters, buffers, then each child's archive, recursively), except that a
// child missing under its name is read from its legacy name. Returns whether any was.
bool load_module_tree(torch::nn::Module& module, torch::serialize::InputArchive& archive) {
  bool used_legacy = false;
  for (auto& p : module.named_parameters(/*recurse=*/false)) archive.read(p.key(), p.value());
  for (auto& b : module.named_buffers(/*recurse=*/false)) archive.read(b.key(), b.value(), /*is_buffer=*/true);
  for (auto& child : module.named_children()) {
    torch::serialize::InputArchive child_archive;
    if (!archive.try_read(child.key(), child_archive)) {
      const char* old = legacy_name(child.key());
      if (old && archive.try_read(old, child_archive)) used_legacy = true;
      else archive.read(child.key(), child_archive);  // throws LibTorch's "no such key" error
    }
    used_legacy = load_module_tree(*child.value(), child_archive) || used_legacy;
  }
  return used_legacy;
}

// weights_sha256 with every key passed through `rename` first.
std::string weights_sha256_named(torch::nn::Module& module, const std::function<std::string(const std::string&)>& rename) {
  Sha256 h;
  auto absorb = [&](const std::string& name, const at::Tensor& t) {
    auto c = t.detach().to(at::kCPU).contiguous();
    std::string header = fmt::format("{}|{}|{}|", rename(name), fmt::join(c.sizes().vec(), ","), c10::toString(c.scalar_type()));
    h.update(header.data(), header.size());
    h.update(c.data_ptr(), c.numel() * c.element_size());
  };
  for (const auto& kv : module.named_parameters()) absorb(kv.key(), kv.value());
  for (const auto& kv : module.named_buffers()) absorb(kv.key(), kv.value());
  return h.hex_digest();
}

// Runs `body`; a LibTorch or parser error from a damaged record becomes one InputError line.
template <typename F>
auto guard_corrupt(const std::string& path, F&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const InputError&) {
    throw;
  } catch (const c10::Error& e) {
    throw InputError(fmt::format("{}: corrupt checkpoint ({})", path, first_line(e.what_without_backtrace())));
  } catch (const std::exception& e) {  // e.g. the TorchScript parser on a damaged code record
    throw InputError(fmt::format("{}: corrupt checkpoint ({})", path, first_line(e.what())));
  }
}

torch::serialize::InputArchive open_archive(const std::string& path, const std::string& magic,
                                            const std::string& kind) {
  read_file(path);  // missing / directory / unreadable -> one-line InputError naming the path
  check_archive_pickles(path, "corrupt checkpoint");
  torch::serialize::InputArchive archive;
  try {
    archive.load_from(path);
  } catch (const c10::Error& e) {
    throw InputError(fmt::format("{}: not a readable {} ({})", path, kind, first_line(e.what_without_backtrace())));
  }
  c10::IValue stored_magic;
  if (!archive.try_read("magic", stored_magic) || !stored_magic.isString() || stored_magic.toStringRef() != magic)
    throw InputError(fmt::format("{}: not a {} (no magic)", path, kind));
  return archive;
}

// The key under which the optimizer keeps a parameter's state: its TensorImpl's address, held as
// the string LibTorch 1.x prints for it ("0x55..."), or as the pointer itself (2.x).
template <typename Key>
Key optimizer_state_key(at::TensorImpl* impl) {
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream s;
    s << static_cast<const void*>(impl);
    return s.str();
  } else {
    return impl;
  }
}

int64_t archive_count(torch::serialize::InputArchive& archive, const std::string& key) {
  at::Tensor n;
  archive.read(key, n);
  if (n.numel() != 1) throw InputError(fmt::format("optimizer record {} is not a count", key));
  return n.item<int64_t>();
}

// AdamW's state as both LibTorch versions write it: "state" holds <key>/{step, exp_avg,
// exp_avg_sq[, max_exp_avg_sq]}, "param_groups" holds param_groups/<i>/params/<j> = <key>; <key> names
// a parameter by its address when it was written. Optimizer::load maps them back by parsing that
// address, and 1.x writes it in hex ("0x55...") while 2.x parses decimal: every state of a 1.x
// file lands on one key and the rest are null (a crash at the first step). Matching the key
// strings as written reads either version's file on either version. The group options are the
// resumed config's, as 1.x leaves them.
void load_adamw_state(torch::serialize::InputArchive& archive, torch::optim::Optimizer& optimizer) {
  c10::IValue version;
  if (!archive.try_read("pytorch_version", version))
    throw InputError("optimizer state in a layout older than LibTorch 1.5");
  torch::serialize::InputArchive state_archive, groups_archive;
  archive.read("state", state_archive);
  archive.read("param_groups", groups_archive);
  std::map<std::string, std::unique_ptr<torch::optim::AdamWParamState>> saved;
  for (const auto& key : state_archive.keys()) {
    torch::serialize::InputArchive one;
    state_archive.read(key, one);
    auto state = std::make_unique<torch::optim::AdamWParamState>();
    state->serialize(one);
    if (!state->exp_avg().defined() || !state->exp_avg_sq().defined())
      throw InputError(fmt::format("optimizer state {} has no moment estimates", key));
    saved[key] = std::move(state);
  }
  const int64_t groups = archive_count(groups_archive, "param_groups/size");
  if (groups != static_cast<int64_t>(optimizer.param_groups().size()))
    throw InputError(fmt::format("{} parameter groups stored, {} in the model", groups, optimizer.param_groups().size()));
  using Key = typename std::decay_t<decltype(optimizer.state())>::key_type;
  for (int64_t i = 0; i < groups; ++i) {
    torch::serialize::InputArchive group;
    groups_archive.read("param_groups/" + std::to_string(i), group);
    const auto& params = optimizer.param_groups()[static_cast<size_t>(i)].params();
    const int64_t size = archive_count(group, "params/size");
    if (size != static_cast<int64_t>(params.size()))
      throw InputError(fmt::format("parameter group {} holds {} parameters stored, {} in the model", i, size,
                                   params.size()));
    for (int64_t j = 0; j < size; ++j) {
      c10::IValue key;
      group.read("params/" + std::to_string(j), key);
      if (!key.isString()) throw InputError(fmt::format("parameter group {} entry {} is not a key", i, j));
      const auto found = saved.find(key.toStringRef());
      if (found == saved.end()) continue;  // a parameter without state yet: no step has touched it
      const auto& p = params[static_cast<size_t>(j)];
      if (!found->second || found->second->exp_avg().sizes() != p.sizes())
        throw InputError(fmt::format("optimizer state for parameter {} of group {} does not match its shape", j, i));
      optimizer.state()[optimizer_state_key<Key>(p.unsafeGetTensorImpl())] = std::move(found->second);
    }
  }
}

}  // namespace

nlohmann::json load_training_archive(const std::string& path, const std::string& magic, const std::string& kind,
                                     const std::function<torch::nn::Module&(const nlohmann::json& meta)>& build) {
  return guard_corrupt(path, [&] {
    auto archive = open_archive(path, magic, kind);
    c10::IValue meta_record;
    if (!archive.try_read("meta", meta_record) || !meta_record.isString())
      throw InputError(fmt::format("{}: checkpoint has no meta record", path));
    nlohmann::json meta;
    try {
      meta = nlohmann::json::parse(meta_record.toStringRef());
    } catch (const nlohmann::json::exception&) {
      throw InputError(fmt::format("{}: checkpoint meta is not JSON", path));
    }
    if (!meta.contains("model")) throw InputError(fmt::format("{}: checkpoint meta has no model config", path));
    torch::nn::Module* module = nullptr;
    {
      CpuRngGuard keep;  // building the model draws initial weights: leave the caller's stream as it was
      module = &build(meta);
    }
    torch::serialize::InputArchive model_archive;
    if (!archive.try_read("model", model_archive))
      throw InputError(fmt::format("{}: checkpoint has no model weights", path));
    // Module::load replaces each tensor without comparing shapes: check them against the model
    // the stored config builds, so weights from another config are an error, not a later crash.
    std::vector<std::pair<std::string, std::vector<int64_t>>> expected;
    for (const auto& kv : module->named_parameters()) expected.emplace_back(kv.key(), kv.value().sizes().vec());
    for (const auto& kv : module->named_buffers()) expected.emplace_back(kv.key(), kv.value().sizes().vec());
    bool legacy_keys = false;
    try {
      legacy_keys = load_module_tree(*module, model_archive);
    } catch (const c10::Error& e) {
      throw InputError(fmt::format("{}: weights do not match the stored config ({})", path,
                                   first_line(e.what_without_backtrace())));
    }
    size_t i = 0;
    auto check = [&](const std::string& name, const at::Tensor& t) {
      if (i < expected.size() && expected[i].first == name && t.sizes().vec() == expected[i].second) {
        ++i;
        return;
      }
      throw InputError(fmt::format("{}: weights do not match the stored config ({}: stored [{}], config [{}])", path,
                                   name, fmt::join(t.sizes().vec(), ", "),
                                   i < expected.size() ? fmt::format("{}", fmt::join(expected[i].second, ", ")) : ""));
    };
    for (const auto& kv : module->named_parameters()) check(kv.key(), kv.value());
    for (const auto& kv : module->named_buffers()) check(kv.key(), kv.value());
    // The checksum hashes key names too: an archive with legacy keys was summed under them.
    if (meta.contains(kWeightsKey) &&
        meta[kWeightsKey] != (legacy_keys ? weights_sha256_named(*module, legacy_key) : weights_sha256(*module)))
      throw InputError(fmt::format("{}: corrupt checkpoint (weights do not match their stored checksum)", path));
    return meta;
  });
}

void load_training_state(const std::string& path, const std::string& magic, const std::string& kind,
                         torch::optim::Optimizer& optimizer) {
  guard_corrupt(path, [&] {
    auto archive = open_archive(path, magic, kind);
    torch::serialize::InputArchive opt_archive;
    if (!archive.try_read("optimizer", opt_archive))
      throw InputError(fmt::format("{}: checkpoint has no optimizer state", path));
    try {
      load_adamw_state(opt_archive, optimizer);
    } catch (const InputError& e) {
      throw InputError(fmt::format("{}: optimizer state does not match ({})", path, e.what()));
    } catch (const c10::Error& e) {
      throw InputError(
          fmt::format("{}: optimizer state does not match ({})", path, first_line(e.what_without_backtrace())));
    }
    at::Tensor rng;
    if (archive.try_read("rng_state", rng)) {
      at::Generator gen = at::detail::getDefaultCPUGenerator();
      gen.set_state(rng);
    }
  });
}

LoadedCheckpoint load_checkpoint(const std::string& path) {
  return load_model_archive<LoadedCheckpoint>(
      path, kMagic, kKind, "bad model config in checkpoint: ",
      [](const nlohmann::json& j) { return model_config_from_json(j); },
      [](const ModelConfig& config) { return LanguageModel(config); });
}

void load_optimizer_and_rng(const std::string& path, torch::optim::Optimizer& optimizer) {
  load_training_state(path, kMagic, kKind, optimizer);
}

bool all_finite(torch::nn::Module& module) {
  at::NoGradGuard no_grad;
  std::vector<at::Tensor> bad;
  for (const auto& p : module.parameters()) bad.push_back(at::isfinite(p).logical_not().any().view({1}));
  return bad.empty() || !at::cat(bad).any().item<bool>();
}

std::string weights_sha256(torch::nn::Module& module) {
  return weights_sha256_named(module, [](const std::string& key) { return key; });
}

}  // namespace grassaudit
