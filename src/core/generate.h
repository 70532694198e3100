#pragma once
// Text generation for the built-in models, through their incremental path
// (LanguageModelImpl::step): the prompt is prefilled in one step, then one token per step.
// Deterministic for a seed (the sampler draws from its own generator; same threads, same ids).
#include <cstdint>
#include <vector>

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include "core/language_model.h"

namespace grassaudit {

struct SamplingOptions {
  double temperature = 1.0;  // 0: greedy (argmax)
  int64_t top_k = 0;         // 0: the whole vocabulary
  uint64_t seed = 1234;
};

// InputError naming the first bad field (temperature < 0 or not finite, top_k < 0).
void validate_sampling(const SamplingOptions& opt);

// logits [V] (any floating dtype) -> the next id: argmax at temperature 0, else a draw from
// softmax(logits / T) restricted to the top_k largest.
int64_t sample_next(const at::Tensor& logits, const SamplingOptions& opt, at::Generator& gen);

// The prompt's ids continued by `n` new ids (returned: the new ids only), eval mode, no grad.
// Learned positions end at max_len: a context that reaches it restarts from its last max_len / 2
// ids (one prefill), so generation is not limited by max_len. InputError for an empty prompt or
// a model without an incremental path (its one line).
std::vector<int64_t> generate_tokens(LanguageModel& model, const std::vector<int64_t>& prompt, int64_t n,
                                     const SamplingOptions& opt);

}  // namespace grassaudit
