#pragma once
// The one vocabulary for what a token mixer mixes with: its family, its pairing direction and
// the public mixer names that stand for a (family, pairing). The mixer registry
// (core/token_mixer.h) takes each entry's family and pairing from this table and checks them
// against it; the trainers write these names into summary.json and the report parses them back
// here. It lives in util because both core and report need it and neither may include the other.
#include <optional>
#include <string>
#include <vector>

namespace grassaudit {

enum class MixerFamily { kGrassmann, kAttention };
// Which positions output t reads: future (t and t+D), past (t and t-D), causal-mask (1..t).
enum class MixerPairing { kFuture, kPast, kCausalMask };

struct MixerKind {
  MixerFamily family;
  MixerPairing pairing;
};

// A public mixer name (`--mixer`, summary.json "mixer") and what it stands for.
struct PublicMixer {
  std::string name;
  MixerKind kind;
};
// "future", "past", "attention", in the order error messages list them.
const std::vector<PublicMixer>& public_mixers();
// nullopt for a name that is not in public_mixers().
std::optional<MixerKind> find_public_mixer(const std::string& name);
// The public name that stands for `kind`; std::logic_error for a kind no name stands for.
std::string public_mixer_name(const MixerKind& kind);

std::string family_name(MixerFamily family);      // "grassmann" | "attention"
std::string pairing_name(MixerPairing pairing);   // "future" | "past" | "causal-mask"

// Each throws InputError "<where>: '<key>' must be ..., got \"<text>\"" for any other value;
// `key` is the JSON key the text was read from.
MixerKind parse_run_mixer(const std::string& text, const std::string& where);  // "mixer"
// "grassmann" | "attention"
MixerFamily parse_family(const std::string& text, const std::string& where, const char* key = "family");
// "future" | "past" | "causal-mask"
MixerPairing parse_pairing(const std::string& text, const std::string& where);  // "pairing"
// paper.json's pairing: the paper has no code, so its Grassmann pairing is "future-as-written"
// (kFuture); also "past" | "causal-mask".
MixerPairing parse_paper_pairing(const std::string& text, const std::string& where);  // "pairing"

// Attention pairs by causal mask; a Grassmann mixer pairs with the future or the past.
bool pairing_fits(MixerFamily family, MixerPairing pairing);

}  // namespace grassaudit
