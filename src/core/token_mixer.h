#pragma once
// The one interface every token mixer implements, and the registry: the one place that knows
// which mixers exist and what each one is (family, pairing, reference twin, public name). The
// family and pairing vocabulary, and which public name stands for which, is util/mixer_kind.h,
// shared with the report; every entry here agrees with it (check_consistency).
// A mixer maps the block input h [B, L, d] to the mixed, normalised state hhat [B, L, d] that
// the block's feed-forward then reads. Blocks hold std::shared_ptr<TokenMixerImpl> so any
// registered mixer plugs in.
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <torch/nn/module.h>

#include "util/mixer_kind.h"

namespace grassaudit {

struct ModelConfig;

// What a mixer keeps between incremental calls (generation, streaming): a KV cache, or the last
// reduced states of a Grassmann layer. `offset` is the number of positions consumed so far.
struct MixerCache {
  std::vector<torch::Tensor> tensors;
  int64_t offset = 0;
};

class TokenMixerImpl : public torch::nn::Module {
 public:
  // h: [B, L, d] -> [B, L, d]
  virtual torch::Tensor forward(const torch::Tensor& h) = 0;
  // The incremental path. h: [B, n, d], the n >= 1 positions after cache.offset -> their mixed
  // states [B, n, d], exactly forward()'s rows for those positions (tests/core/test_incremental.cpp);
  // cache is advanced. Mixers without one (future pairing needs tokens that do not exist yet)
  // keep the default, which throws InputError with incremental_unsupported().
  virtual bool has_incremental() const { return false; }
  virtual std::string incremental_unsupported() const { return "this mixer has no incremental path"; }
  virtual torch::Tensor step(const torch::Tensor& h, MixerCache& cache);
};

using TokenMixerFactory =
    std::function<std::shared_ptr<TokenMixerImpl>(const ModelConfig&, int64_t layer)>;

struct MixerInfo {
  std::string name;            // registry name (ModelConfig::mixer, --mixer)
  std::string summary;         // one line for `grassaudit mixers`
  std::string base_name;       // public name summary.json uses: "literal-future" -> "future"
  std::string reference_twin;  // registry name of the readable reference of the same function;
                               // empty for entries that are themselves references
  MixerFamily family = MixerFamily::kGrassmann;
  MixerPairing pairing = MixerPairing::kPast;
  bool is_reference = false;   // a slow, readable reference path (for tests and bench)
};

// The family and pairing that the public name `base_name` stands for (util/mixer_kind.h), for
// filling a MixerInfo; std::logic_error for a name that is not in that table.
MixerKind public_mixer_kind(const std::string& base_name);

// Maps mixer names to their description and factory. Every built-in mixer is added by an
// explicit call in register_builtin_mixers() when instance() is first used (no static
// registration, so the linker keeps each mixer's translation unit). names() is sorted so
// error messages are stable.
class MixerRegistry {
 public:
  static MixerRegistry& instance();
  // Throws std::logic_error on a duplicate name (a programming error, not bad input).
  void add(MixerInfo info, TokenMixerFactory factory);
  // Throws InputError listing the valid names when `name` is unknown.
  void check_name(const std::string& name) const;
  const MixerInfo& info(const std::string& name) const;
  std::shared_ptr<TokenMixerImpl> create(const ModelConfig& cfg, int64_t layer) const;
  std::vector<std::string> names() const;
  // The non-reference entries: what users train, audit and report.
  std::vector<std::string> public_names() const;
  std::string summary(const std::string& name) const;
  // Throws std::logic_error unless every entry's base_name is in public_mixers() with the entry's
  // family and pairing (summary.json carries only that name, and the report reads family and
  // pairing back from the table), every reference_twin names a reference entry of the same
  // family, pairing and base name, and every reference's base_name is a public entry.
  void check_consistency() const;

 private:
  struct Entry {
    MixerInfo info;
    TokenMixerFactory factory;
  };
  std::map<std::string, Entry> entries_;
};

// Adds every built-in mixer. Called once by MixerRegistry::instance().
void register_builtin_mixers(MixerRegistry& registry);

}  // namespace grassaudit
