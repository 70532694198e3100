// The mixer registry: what it says about each built-in mixer (family, pairing, twin, public
// name), the exact public strings, and errors on unknown names.
#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/model_config.h"
#include "core/token_mixer.h"
#include "util/error.h"

using namespace grassaudit;

TEST(MixerRegistry, NamesAndPublicNames) {
  const auto& reg = MixerRegistry::instance();
  EXPECT_EQ(reg.names(), (std::vector<std::string>{"attention", "future", "literal-attention", "literal-future",
                                                   "literal-past", "past"}));
  EXPECT_EQ(reg.public_names(), (std::vector<std::string>{"attention", "future", "past"}));
}

TEST(MixerRegistry, InfoOfEveryBuiltIn) {
  struct Want {
    const char* name;
    const char* base;
    const char* twin;
    MixerFamily family;
    MixerPairing pairing;
    bool reference;
  };
  const Want want[] = {
      {"future", "future", "literal-future", MixerFamily::kGrassmann, MixerPairing::kFuture, false},
      {"past", "past", "literal-past", MixerFamily::kGrassmann, MixerPairing::kPast, false},
      {"attention", "attention", "literal-attention", MixerFamily::kAttention, MixerPairing::kCausalMask, false},
      {"literal-future", "future", "", MixerFamily::kGrassmann, MixerPairing::kFuture, true},
      {"literal-past", "past", "", MixerFamily::kGrassmann, MixerPairing::kPast, true},
      {"literal-attention", "attention", "", MixerFamily::kAttention, MixerPairing::kCausalMask, true},
  };
  const auto& reg = MixerRegistry::instance();
  for (const auto& w : want) {
    const MixerInfo& m = reg.info(w.name);
    EXPECT_EQ(m.name, w.name);
    EXPECT_EQ(m.base_name, w.base) << w.name;
    EXPECT_EQ(m.reference_twin, w.twin) << w.name;
    EXPECT_EQ(m.family, w.family) << w.name;
    EXPECT_EQ(m.pairing, w.pairing) << w.name;
    EXPECT_EQ(m.is_reference, w.reference) << w.name;
    EXPECT_FALSE(m.summary.empty()) << w.name;
    EXPECT_EQ(reg.summary(w.name), m.summary);
  }
}

TEST(MixerRegistry, PublicStrings) {
  EXPECT_EQ(pairing_name(MixerPairing::kFuture), "future");
  EXPECT_EQ(pairing_name(MixerPairing::kPast), "past");
  EXPECT_EQ(pairing_name(MixerPairing::kCausalMask), "causal-mask");
  EXPECT_EQ(family_name(MixerFamily::kGrassmann), "grassmann");
  EXPECT_EQ(family_name(MixerFamily::kAttention), "attention");
}

TEST(MixerRegistry, UnknownNameListsTheValidOnes) {
  const auto& reg = MixerRegistry::instance();
  for (auto call : {+[](const std::string& n) { MixerRegistry::instance().info(n); },
                    +[](const std::string& n) { MixerRegistry::instance().check_name(n); },
                    +[](const std::string& n) { MixerRegistry::instance().summary(n); }}) {
    try {
      call("lstm");
      FAIL() << "no error for an unknown mixer";
    } catch (const InputError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("unknown mixer 'lstm'"), std::string::npos) << what;
      for (const auto& n : reg.names()) EXPECT_NE(what.find(n), std::string::npos) << what;
    }
  }
}

TEST(MixerRegistry, IsGrassmannFollowsTheFamily) {
  for (const auto& name : MixerRegistry::instance().names()) {
    ModelConfig c;
    c.mixer = name;
    EXPECT_EQ(c.is_grassmann(), MixerRegistry::instance().info(name).family == MixerFamily::kGrassmann) << name;
  }
  ModelConfig c;
  c.mixer = "literal-attention";
  EXPECT_FALSE(c.is_grassmann());
}

// The checks a new entry must pass (they run on the built-ins every time instance() is built).
// An entry's defaults are Grassmann / past, the kind util/mixer_kind.h gives the name "past".
TEST(MixerRegistry, ConsistencyChecksRejectBadEntries) {
  auto factory = [](const ModelConfig&, int64_t) -> std::shared_ptr<TokenMixerImpl> { return nullptr; };
  auto entry = [](std::string name, std::string base, std::string twin, bool reference) {
    MixerInfo m;
    m.name = std::move(name);
    m.summary = "test";
    m.base_name = std::move(base);
    m.reference_twin = std::move(twin);
    m.is_reference = reference;
    return m;
  };
  {
    MixerRegistry r;
    r.add(entry("past", "past", "ref", false), factory);
    r.add(entry("ref", "past", "", true), factory);
    EXPECT_NO_THROW(r.check_consistency());
    EXPECT_THROW(r.add(entry("past", "past", "", false), factory), std::logic_error);  // duplicate
  }
  {
    MixerRegistry r;  // twin missing
    r.add(entry("past", "past", "ref", false), factory);
    EXPECT_THROW(r.check_consistency(), std::logic_error);
  }
  {
    MixerRegistry r;  // twin is not a reference
    r.add(entry("past", "past", "future", false), factory);
    auto other = entry("future", "future", "", false);
    other.pairing = MixerPairing::kFuture;
    r.add(other, factory);
    EXPECT_THROW(r.check_consistency(), std::logic_error);
  }
  {
    MixerRegistry r;  // twin of another family
    r.add(entry("past", "past", "ref", false), factory);
    auto ref = entry("ref", "past", "", true);
    ref.family = MixerFamily::kAttention;
    r.add(ref, factory);
    EXPECT_THROW(r.check_consistency(), std::logic_error);
  }
  {
    MixerRegistry r;  // reference whose base name is not a public mixer
    r.add(entry("ref", "nothing", "", true), factory);
    EXPECT_THROW(r.check_consistency(), std::logic_error);
  }
  {
    MixerRegistry r;  // reference whose base name is public, but not registered here
    r.add(entry("ref", "past", "", true), factory);
    EXPECT_THROW(r.check_consistency(), std::logic_error);
  }
  {
    MixerRegistry r;  // public mixer the vocabulary does not name: the report could not read its runs
    r.add(entry("fast", "fast", "", false), factory);
    EXPECT_THROW(r.check_consistency(), std::logic_error);
  }
  {
    MixerRegistry r;  // public mixer whose pairing contradicts its name
    auto wrong = entry("future", "future", "", false);  // the default pairing is past
    r.add(wrong, factory);
    EXPECT_THROW(r.check_consistency(), std::logic_error);
  }
}

// Every public mixer of the vocabulary is registered, with the family and pairing it names.
TEST(MixerRegistry, PublicNamesAreTheVocabulary) {
  const auto& reg = MixerRegistry::instance();
  std::vector<std::string> names;
  for (const auto& m : public_mixers()) {
    names.push_back(m.name);
    const MixerInfo& info = reg.info(m.name);
    EXPECT_EQ(info.family, m.kind.family) << m.name;
    EXPECT_EQ(info.pairing, m.kind.pairing) << m.name;
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, reg.public_names());
  EXPECT_EQ(public_mixer_kind("attention").pairing, MixerPairing::kCausalMask);
  EXPECT_THROW(public_mixer_kind("literal-past"), std::logic_error);
}
