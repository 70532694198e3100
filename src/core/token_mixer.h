#pragma once
// The one interface every token mixer implements. A mixer maps the block input h [B, L, d]
// to the mixed, normalised state hhat [B, L, d] that the block's feed-forward then reads.
// Blocks hold std::shared_ptr<TokenMixerImpl> so any registered mixer plugs in.
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <torch/nn/module.h>

namespace grassaudit {

struct ModelConfig;

class TokenMixerImpl : public torch::nn::Module {
 public:
  // h: [B, L, d] -> [B, L, d]
  virtual torch::Tensor forward(const torch::Tensor& h) = 0;
  virtual std::string name() const = 0;
  // Which positions output t reads, in words (e.g. "t and t-1, t-2 (past pairing)").
  virtual std::string reads() const = 0;
};

using TokenMixerFactory =
    std::function<std::shared_ptr<TokenMixerImpl>(const ModelConfig&, int64_t layer)>;

// Maps mixer names to factories. Implementations register themselves at static-init time
// (see the bottom of each mixer's .cpp); names() is sorted so error messages are stable.
class MixerRegistry {
 public:
  static MixerRegistry& instance();
  void add(const std::string& name, const std::string& summary, TokenMixerFactory factory);
  // Throws InputError listing the valid names when `name` is unknown.
  void check_name(const std::string& name) const;
  std::shared_ptr<TokenMixerImpl> create(const ModelConfig& cfg, int64_t layer) const;
  std::vector<std::string> names() const;
  std::string summary(const std::string& name) const;

 private:
  struct Entry {
    std::string summary;
    TokenMixerFactory factory;
  };
  std::map<std::string, Entry> entries_;
};

// Adds every built-in mixer. Called once by MixerRegistry::instance(); explicit calls (not
// static registration) so the linker keeps each mixer's translation unit.
void register_builtin_mixers(MixerRegistry& registry);

}  // namespace grassaudit
