#include "util/mixer_kind.h"

#include <stdexcept>

#include "util/config_fields.h"
#include "util/error.h"

namespace grassaudit {
namespace {

[[noreturn]] void bad_value(const std::string& where, const std::string& key,
                            const std::string& allowed, const std::string& text) {
  throw InputError(where + ": '" + key + "' must be " + allowed + ", got \"" + text + "\"");
}

}  // namespace

const std::vector<PublicMixer>& public_mixers() {
  static const std::vector<PublicMixer> table = {
      {"future", {MixerFamily::kGrassmann, MixerPairing::kFuture}},
      {"past", {MixerFamily::kGrassmann, MixerPairing::kPast}},
      {"attention", {MixerFamily::kAttention, MixerPairing::kCausalMask}},
  };
  return table;
}

std::optional<MixerKind> find_public_mixer(const std::string& name) {
  for (const auto& m : public_mixers())
    if (m.name == name) return m.kind;
  return std::nullopt;
}

std::string public_mixer_name(const MixerKind& kind) {
  for (const auto& m : public_mixers())
    if (m.kind.family == kind.family && m.kind.pairing == kind.pairing) return m.name;
  throw std::logic_error("no public mixer is " + family_name(kind.family) + " / " + pairing_name(kind.pairing));
}

std::string family_name(MixerFamily family) {
  switch (family) {
    case MixerFamily::kGrassmann: return "grassmann";
    case MixerFamily::kAttention: return "attention";
  }
  return "?";
}

std::string pairing_name(MixerPairing pairing) {
  switch (pairing) {
    case MixerPairing::kFuture: return "future";
    case MixerPairing::kPast: return "past";
    case MixerPairing::kCausalMask: return "causal-mask";
  }
  return "?";
}

MixerKind parse_run_mixer(const std::string& text, const std::string& where) {
  if (const auto kind = find_public_mixer(text)) return *kind;
  std::vector<std::string> names;
  for (const auto& m : public_mixers()) names.push_back(m.name);
  bad_value(where, "mixer", choices_text(names), text);
}

MixerFamily parse_family(const std::string& text, const std::string& where, const char* key) {
  for (MixerFamily f : {MixerFamily::kGrassmann, MixerFamily::kAttention})
    if (text == family_name(f)) return f;
  bad_value(where, key, "grassmann or attention", text);
}

MixerPairing parse_pairing(const std::string& text, const std::string& where) {
  for (MixerPairing p : {MixerPairing::kFuture, MixerPairing::kPast, MixerPairing::kCausalMask})
    if (text == pairing_name(p)) return p;
  bad_value(where, "pairing", "future, past or causal-mask", text);
}

MixerPairing parse_paper_pairing(const std::string& text, const std::string& where) {
  if (text == "future-as-written") return MixerPairing::kFuture;
  if (text == "past") return MixerPairing::kPast;
  if (text == "causal-mask") return MixerPairing::kCausalMask;
  bad_value(where, "pairing", "future-as-written, past or causal-mask", text);
}

bool pairing_fits(MixerFamily family, MixerPairing pairing) {
  return (family == MixerFamily::kAttention) == (pairing == MixerPairing::kCausalMask);
}

}  // namespace grassaudit
