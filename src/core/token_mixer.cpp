#include "core/token_mixer.h"

#include <stdexcept>

#include <fmt/format.h>

#include "core/model_config.h"
#include "util/error.h"

namespace grassaudit {

MixerKind public_mixer_kind(const std::string& base_name) {
  if (const auto kind = find_public_mixer(base_name)) return *kind;
  throw std::logic_error(fmt::format("mixer registry: '{}' is not a public mixer name (util/mixer_kind.h)", base_name));
}

torch::Tensor TokenMixerImpl::step(const torch::Tensor&, MixerCache&) { throw InputError(incremental_unsupported()); }

MixerRegistry& MixerRegistry::instance() {
  // Built once, fully populated and checked, before anyone can see it (no static-init order games).
  static MixerRegistry* registry = [] {
    auto* r = new MixerRegistry();
    register_builtin_mixers(*r);
    r->check_consistency();
    return r;
  }();
  return *registry;
}

void MixerRegistry::add(MixerInfo info, TokenMixerFactory factory) {
  if (info.name.empty() || entries_.count(info.name))
    throw std::logic_error(fmt::format("mixer registry: empty or duplicate name '{}'", info.name));
  std::string name = info.name;
  entries_[name] = Entry{std::move(info), std::move(factory)};
}

std::vector<std::string> MixerRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& kv : entries_) out.push_back(kv.first);
  return out;
}

std::vector<std::string> MixerRegistry::public_names() const {
  std::vector<std::string> out;
  for (const auto& kv : entries_)
    if (!kv.second.info.is_reference) out.push_back(kv.first);
  return out;
}

void MixerRegistry::check_name(const std::string& name) const {
  if (entries_.count(name)) return;
  std::string valid;
  for (const auto& n : names()) valid += (valid.empty() ? "" : ", ") + n;
  throw InputError(fmt::format("unknown mixer '{}' (valid: {})", name, valid));
}

const MixerInfo& MixerRegistry::info(const std::string& name) const {
  check_name(name);
  return entries_.at(name).info;
}

std::shared_ptr<TokenMixerImpl> MixerRegistry::create(const ModelConfig& cfg, int64_t layer) const {
  check_name(cfg.mixer);
  return entries_.at(cfg.mixer).factory(cfg, layer);
}

std::string MixerRegistry::summary(const std::string& name) const { return info(name).summary; }

void MixerRegistry::check_consistency() const {
  auto fail = [](const std::string& msg) { throw std::logic_error("mixer registry: " + msg); };
  for (const auto& kv : entries_) {
    const MixerInfo& m = kv.second.info;
    if (m.base_name.empty()) fail(fmt::format("'{}' has no base name", m.name));
    // summary.json carries only the base name; the report reads family and pairing back from it.
    const auto kind = find_public_mixer(m.base_name);
    if (!kind) fail(fmt::format("'{}' has base name '{}', not in public_mixers() (util/mixer_kind.h)", m.name,
                                m.base_name));
    if (kind->family != m.family || kind->pairing != m.pairing)
      fail(fmt::format("'{}' is {} / {}, but its base name '{}' stands for {} / {}", m.name, family_name(m.family),
                       pairing_name(m.pairing), m.base_name, family_name(kind->family), pairing_name(kind->pairing)));
    if (m.is_reference) {
      if (!m.reference_twin.empty()) fail(fmt::format("reference '{}' has a reference twin", m.name));
      auto base = entries_.find(m.base_name);
      if (base == entries_.end() || base->second.info.is_reference)
        fail(fmt::format("reference '{}' has base name '{}', not a public mixer", m.name, m.base_name));
      continue;
    }
    if (m.base_name != m.name) fail(fmt::format("public mixer '{}' has base name '{}'", m.name, m.base_name));
    if (m.reference_twin.empty()) continue;
    auto twin = entries_.find(m.reference_twin);
    if (twin == entries_.end()) fail(fmt::format("'{}' names an unknown twin '{}'", m.name, m.reference_twin));
    const MixerInfo& t = twin->second.info;
    if (!t.is_reference || t.family != m.family || t.pairing != m.pairing || t.base_name != m.name)
      fail(fmt::format("'{}' and its twin '{}' disagree (reference flag, family, pairing or base name)", m.name,
                       t.name));
  }
}

}  // namespace grassaudit

namespace grassaudit {

void register_grassmann_mixers(MixerRegistry& registry);  // grassmann_mixer.cpp
void register_attention_mixers(MixerRegistry& registry);  // attention_mixer.cpp, attention_reference.cpp

void register_builtin_mixers(MixerRegistry& r) {
  register_grassmann_mixers(r);
  register_attention_mixers(r);
}

}  // namespace grassaudit
