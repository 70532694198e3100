#include "nli/nli_checkpoint.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>
#include <torch/optim/optimizer.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include "core/checkpoint.h"
#include "core/rng_guard.h"
#include "util/atomic_file.h"
#include "util/error.h"

namespace grassaudit {
namespace {

constexpr const char* kMagic = "grassaudit-nli-checkpoint-v1";

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

torch::serialize::InputArchive open_archive(const std::string& path) {
  read_file(path);  // missing / directory / unreadable: one line naming the path
  torch::serialize::InputArchive archive;
  try {
    archive.load_from(path);
  } catch (const c10::Error& e) {
    throw InputError(fmt::format("{}: not a readable checkpoint ({})", path, first_line(e.what_without_backtrace())));
  }
  c10::IValue magic;
  if (!archive.try_read("magic", magic) || !magic.isString() || magic.toStringRef() != kMagic)
    throw InputError(fmt::format("{}: not a grassaudit NLI checkpoint (written by train-nli?)", path));
  return archive;
}

}  // namespace

void save_nli_checkpoint(const std::string& path, NliModel& model, torch::optim::Optimizer* optimizer,
                         const nlohmann::json& meta_in) {
  nlohmann::json meta = meta_in;
  meta["model"] = to_json(model->config());
  save_training_archive(path, kMagic, meta, *model, optimizer);
}

LoadedNliCheckpoint load_nli_checkpoint(const std::string& path) {
  auto archive = open_archive(path);
  LoadedNliCheckpoint out;
  c10::IValue meta;
  if (!archive.try_read("meta", meta) || !meta.isString())
    throw InputError(fmt::format("{}: checkpoint has no meta record", path));
  try {
    out.meta = nlohmann::json::parse(meta.toStringRef());
  } catch (const nlohmann::json::exception&) {
    throw InputError(fmt::format("{}: checkpoint meta is not JSON", path));
  }
  if (!out.meta.contains("model")) throw InputError(fmt::format("{}: checkpoint meta has no model config", path));
  try {
    out.config = nli_config_from_json(out.meta["model"]);
    out.config.validate();
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", path, e.what()));
  }
  {
    CpuRngGuard keep;  // building the model draws initial weights: leave the global RNG as it was
    out.model = NliModel(out.config, at::zeros({out.config.full_vocab}, at::kLong));
  }
  torch::serialize::InputArchive model_archive;
  if (!archive.try_read("model", model_archive))
    throw InputError(fmt::format("{}: checkpoint has no model weights", path));
  try {
    out.model->load(model_archive);
  } catch (const c10::Error& e) {
    throw InputError(fmt::format("{}: weights do not match the stored config ({})", path,
                                 first_line(e.what_without_backtrace())));
  }
  return out;
}

void load_nli_optimizer_and_rng(const std::string& path, torch::optim::Optimizer& optimizer) {
  auto archive = open_archive(path);
  torch::serialize::InputArchive opt_archive;
  if (!archive.try_read("optimizer", opt_archive))
    throw InputError(fmt::format("{}: checkpoint has no optimizer state", path));
  try {
    optimizer.load(opt_archive);
  } catch (const c10::Error& e) {
    throw InputError(fmt::format("{}: optimizer state does not match ({})", path, first_line(e.what_without_backtrace())));
  }
  at::Tensor rng;
  if (archive.try_read("rng_state", rng)) {
    at::Generator gen = at::detail::getDefaultCPUGenerator();
    gen.set_state(rng);
  }
}

}  // namespace grassaudit
