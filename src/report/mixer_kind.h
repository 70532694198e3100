#pragma once
// The report's vocabulary for what a model mixes with: its family and its pairing direction.
// Run artifacts and the published numbers name these as strings; each string is parsed here,
// once, where it is read (runs.cpp, published.cpp), and every decision in the report uses the
// enums. This mirrors src/core's MixerFamily / MixerPairing, which report/ may not include.
#include <string>

namespace grassaudit {

enum class Family { kGrassmann, kAttention };
// Which positions output t reads: future (t and t+D), past (t and t-D), causal-mask (1..t).
enum class Pairing { kFuture, kPast, kCausalMask };

// A run's summary.json "mixer" ("future" | "past" | "attention"): the family and pairing it names.
struct MixerKind {
  Family family;
  Pairing pairing;
};

// Each throws InputError "<where>: '<key>' must be ..., got \"<text>\"" for any other value;
// `key` is the JSON key the text was read from.
MixerKind parse_run_mixer(const std::string& text, const std::string& where);  // "mixer"
// "grassmann" | "attention"
Family parse_family(const std::string& text, const std::string& where, const char* key = "family");
// "future" | "past" | "causal-mask"
Pairing parse_pairing(const std::string& text, const std::string& where);  // "pairing"
// paper.json's pairing: the paper has no code, so its Grassmann pairing is "future-as-written"
// (kFuture); also "past" | "causal-mask".
Pairing parse_paper_pairing(const std::string& text, const std::string& where);  // "pairing"

// Attention pairs by causal mask; a Grassmann mixer pairs with the future or the past.
bool pairing_fits(Family family, Pairing pairing);

std::string family_name(Family family);     // "grassmann" | "attention"
std::string pairing_name(Pairing pairing);  // "future" | "past" | "causal-mask"

}  // namespace grassaudit
