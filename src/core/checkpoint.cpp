#include "core/checkpoint.h"

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
}

void save_checkpoint(const std::string& path, LanguageModel& model, torch::optim::Optimizer* optimizer,
                     const nlohmann::json& meta_in) {
  nlohmann::json meta = meta_in;
  meta["model"] = to_json(model->config());
  torch::serialize::OutputArchive archive;
  archive.write("magic", c10::IValue(std::string(kMagic)));
  archive.write("meta", c10::IValue(meta.dump()));
  torch::serialize::OutputArchive model_archive;
  model->save(model_archive);
  archive.write("model", model_archive);
  if (optimizer) {
    torch::serialize::OutputArchive opt_archive;
    optimizer->save(opt_archive);
    archive.write("optimizer", opt_archive);
  }
  archive.write("rng_state", at::detail::getDefaultCPUGenerator().get_state());
  write_file_atomic_with(path, [&](const std::string& tmp) {
    try {
      archive.save_to(tmp);
    } catch (const c10::Error& e) {
      throw InputError(fmt::format("cannot write checkpoint {}: {}", path, e.what_without_backtrace()));
    }
  });
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

LoadedCheckpoint load_checkpoint(const std::string& path) {
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
  out.config = model_config_from_json(out.meta["model"]);
  out.model = LanguageModel(out.config);
  torch::serialize::InputArchive model_archive;
  if (!archive.try_read("model", model_archive))
    throw InputError(fmt::format("{}: checkpoint has no model weights", path));
  try {
    out.model->load(model_archive);
  } catch (const c10::Error& e) {
    std::string what = e.what_without_backtrace();
    throw InputError(fmt::format("{}: weights do not match the stored config ({})", path,
                                 what.substr(0, what.find('\n'))));
  }
  return out;
}

void load_optimizer_and_rng(const std::string& path, torch::optim::Optimizer& optimizer) {
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
