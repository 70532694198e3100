#include "core/checkpoint.h"

#include "core/rng_guard.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/optim/optimizer.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include "util/atomic_file.h"
#include "util/error.h"
#include "util/sha256.h"

namespace grassaudit {
namespace {
constexpr const char* kMagic = "grassaudit-checkpoint-v1";
constexpr const char* kWeightsKey = "stored_weights_sha256";
}

void save_training_archive(const std::string& path, const std::string& magic, const nlohmann::json& meta,
                           torch::nn::Module& module, torch::optim::Optimizer* optimizer) {
  torch::serialize::OutputArchive archive;
  archive.write("magic", c10::IValue(magic));
  archive.write("meta", c10::IValue(meta.dump()));
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
  // The archive format has no checksum over tensor data (a flipped byte loads silently).
  meta[kWeightsKey] = weights_sha256(*model);
  save_training_archive(path, kMagic, meta, *model, optimizer);
}

namespace {
torch::serialize::InputArchive open_archive(const std::string& path) {
  torch::serialize::InputArchive archive;
  try {
    archive.load_from(path);
  } catch (const c10::Error& e) {
    std::string what = e.what_without_backtrace();
    throw InputError(fmt::format("{}: not a readable grassaudit checkpoint ({})", path,
                                 what.substr(0, what.find('\n'))));
  }
  c10::IValue magic;
  if (!archive.try_read("magic", magic) || !magic.isString() || magic.toStringRef() != kMagic)
    throw InputError(fmt::format("{}: not a grassaudit checkpoint (no magic)", path));
  return archive;
}
}  // namespace

namespace {
LoadedCheckpoint load_checkpoint_unguarded(const std::string& path);
}

LoadedCheckpoint load_checkpoint(const std::string& path) {
  try {
    return load_checkpoint_unguarded(path);
  } catch (const InputError&) {
    throw;
  } catch (const c10::Error& e) {  // a damaged record inside a readable archive
    std::string what = e.what_without_backtrace();
    throw InputError(fmt::format("{}: corrupt checkpoint ({})", path, what.substr(0, what.find('\n'))));
  } catch (const std::exception& e) {  // e.g. the TorchScript parser on a damaged code record
    std::string what = e.what();
    throw InputError(fmt::format("{}: corrupt checkpoint ({})", path, what.substr(0, what.find('\n'))));
  }
}

namespace {
LoadedCheckpoint load_checkpoint_unguarded(const std::string& path) {
  read_file(path);  // missing / directory / unreadable -> one-line InputError naming the path
  auto archive = open_archive(path);
  LoadedCheckpoint out;
  c10::IValue meta;
  if (!archive.try_read("meta", meta) || !meta.isString())
    throw InputError(fmt::format("{}: checkpoint has no meta record", path));
  try {
    out.meta = nlohmann::json::parse(meta.toStringRef());
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("{}: checkpoint meta is not JSON", path));
  }
  if (!out.meta.contains("model")) throw InputError(fmt::format("{}: checkpoint meta has no model config", path));
  try {
    out.config = model_config_from_json(out.meta["model"]);
    out.config.validate();
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: bad model config in checkpoint: {}", path, e.what()));
  }
  {
    CpuRngGuard keep;  // building the model draws initial weights: leave the caller's stream as it was
    out.model = LanguageModel(out.config);
  }
  torch::serialize::InputArchive model_archive;
  if (!archive.try_read("model", model_archive))
    throw InputError(fmt::format("{}: checkpoint has no model weights", path));
  // Module::load replaces each tensor without comparing shapes: check them against the model
  // the stored config builds, so weights from another config are an error, not a later crash.
  std::vector<std::pair<std::string, std::vector<int64_t>>> expected;
  for (const auto& kv : out.model->named_parameters()) expected.emplace_back(kv.key(), kv.value().sizes().vec());
  for (const auto& kv : out.model->named_buffers()) expected.emplace_back(kv.key(), kv.value().sizes().vec());
  try {
    out.model->load(model_archive);
  } catch (const c10::Error& e) {
    std::string what = e.what_without_backtrace();
    throw InputError(fmt::format("{}: weights do not match the stored config ({})", path,
                                 what.substr(0, what.find('\n'))));
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
  for (const auto& kv : out.model->named_parameters()) check(kv.key(), kv.value());
  for (const auto& kv : out.model->named_buffers()) check(kv.key(), kv.value());
  if (out.meta.contains(kWeightsKey) && out.meta[kWeightsKey] != weights_sha256(*out.model))
    throw InputError(fmt::format("{}: corrupt checkpoint (weights do not match their stored checksum)", path));
  return out;
}
}  // namespace

void load_optimizer_and_rng(const std::string& path, torch::optim::Optimizer& optimizer) try {
  auto archive = open_archive(path);
  torch::serialize::InputArchive opt_archive;
  if (!archive.try_read("optimizer", opt_archive))
    throw InputError(fmt::format("{}: checkpoint has no optimizer state", path));
  try {
    optimizer.load(opt_archive);
  } catch (const c10::Error& e) {
    std::string what = e.what_without_backtrace();
    throw InputError(fmt::format("{}: optimizer state does not match ({})", path, what.substr(0, what.find('\n'))));
  }
  at::Tensor rng;
  if (archive.try_read("rng_state", rng)) {
    at::Generator gen = at::detail::getDefaultCPUGenerator();
    gen.set_state(rng);
  }
} catch (const InputError&) {
  throw;
} catch (const std::exception& e) {  // c10::Error included: a damaged record
  std::string what = e.what();
  throw InputError(fmt::format("{}: corrupt checkpoint ({})", path, what.substr(0, what.find('\n'))));
}

bool all_finite(torch::nn::Module& module) {
  at::NoGradGuard no_grad;
  std::vector<at::Tensor> bad;
  for (const auto& p : module.parameters()) bad.push_back(at::isfinite(p).logical_not().any().view({1}));
  return bad.empty() || !at::cat(bad).any().item<bool>();
}

std::string weights_sha256(torch::nn::Module& module) {
  Sha256 h;
  auto absorb = [&](const std::string& name, const at::Tensor& t) {
    auto c = t.detach().to(at::kCPU).contiguous();
    std::string header = fmt::format("{}|{}|{}|", name, fmt::join(c.sizes().vec(), ","), c10::toString(c.scalar_type()));
    h.update(header.data(), header.size());
    h.update(c.data_ptr(), c.numel() * c.element_size());
  };
  for (const auto& kv : module.named_parameters()) absorb(kv.key(), kv.value());
  for (const auto& kv : module.named_buffers()) absorb(kv.key(), kv.value());
  return h.hex_digest();
}

}  // namespace grassaudit
