#include "core/token_mixer.h"

#include <fmt/format.h>

#include "core/model_config.h"
#include "util/error.h"

namespace grassaudit {

MixerRegistry& MixerRegistry::instance() {
  // Built once, fully populated, before anyone can see it (no static-init order games).
  static MixerRegistry* registry = [] {
    auto* r = new MixerRegistry();
    register_builtin_mixers(*r);
    return r;
  }();
  return *registry;
}

void MixerRegistry::add(const std::string& name, const std::string& summary,
                        TokenMixerFactory factory) {
  entries_[name] = Entry{summary, std::move(factory)};
}

std::vector<std::string> MixerRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& kv : entries_) out.push_back(kv.first);
  return out;
}

void MixerRegistry::check_name(const std::string& name) const {
  if (entries_.count(name)) return;
  std::string valid;
  for (const auto& n : names()) valid += (valid.empty() ? "" : ", ") + n;
  throw InputError(fmt::format("unknown mixer '{}' (valid: {})", name, valid));
}

std::shared_ptr<TokenMixerImpl> MixerRegistry::create(const ModelConfig& cfg, int64_t layer) const {
  check_name(cfg.mixer);
  return entries_.at(cfg.mixer).factory(cfg, layer);
}

std::string MixerRegistry::summary(const std::string& name) const {
  check_name(name);
  return entries_.at(name).summary;
}

}  // namespace grassaudit

namespace grassaudit {

void register_grassmann_mixers(MixerRegistry& registry);  // grassmann_mixer.cpp
void register_attention_mixer(MixerRegistry& registry);   // attention_mixer.cpp

void register_builtin_mixers(MixerRegistry& r) {
  register_grassmann_mixers(r);
  register_attention_mixer(r);
}

}  // namespace grassaudit
