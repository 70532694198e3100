#include "report/mixer_kind.h"

#include "util/error.h"

namespace grassaudit {
namespace {

[[noreturn]] void bad_value(const std::string& where, const std::string& key,
                            const std::string& allowed, const std::string& text) {
  throw InputError(where + ": '" + key + "' must be " + allowed + ", got \"" + text + "\"");
}

}  // namespace

MixerKind parse_run_mixer(const std::string& text, const std::string& where) {
  if (text == "future") return {Family::kGrassmann, Pairing::kFuture};
  if (text == "past") return {Family::kGrassmann, Pairing::kPast};
  if (text == "attention") return {Family::kAttention, Pairing::kCausalMask};
  bad_value(where, "mixer", "future, past or attention", text);
}

Family parse_family(const std::string& text, const std::string& where, const char* key) {
  if (text == "grassmann") return Family::kGrassmann;
  if (text == "attention") return Family::kAttention;
  bad_value(where, key, "grassmann or attention", text);
}

Pairing parse_pairing(const std::string& text, const std::string& where) {
  if (text == "future") return Pairing::kFuture;
  if (text == "past") return Pairing::kPast;
  if (text == "causal-mask") return Pairing::kCausalMask;
  bad_value(where, "pairing", "future, past or causal-mask", text);
}

Pairing parse_paper_pairing(const std::string& text, const std::string& where) {
  if (text == "future-as-written") return Pairing::kFuture;
  if (text == "past") return Pairing::kPast;
  if (text == "causal-mask") return Pairing::kCausalMask;
  bad_value(where, "pairing", "future-as-written, past or causal-mask", text);
}

bool pairing_fits(Family family, Pairing pairing) {
  return (family == Family::kAttention) == (pairing == Pairing::kCausalMask);
}

std::string family_name(Family family) {
  switch (family) {
    case Family::kGrassmann:
      return "grassmann";
    case Family::kAttention:
      return "attention";
  }
  return "?";
}

std::string pairing_name(Pairing pairing) {
  switch (pairing) {
    case Pairing::kFuture:
      return "future";
    case Pairing::kPast:
      return "past";
    case Pairing::kCausalMask:
      return "causal-mask";
  }
  return "?";
}

}  // namespace grassaudit
