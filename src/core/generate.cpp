#include "core/generate.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/grad_mode.h>
#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "util/error.h"

namespace grassaudit {

void validate_sampling(const SamplingOptions& opt) {
  if (!std::isfinite(opt.temperature) || opt.temperature < 0)
    throw InputError(fmt::format("--temperature must be >= 0 (0: greedy), got {}", opt.temperature));
  if (opt.top_k < 0) throw InputError(fmt::format("--top-k must be >= 0 (0: all), got {}", opt.top_k));
}

int64_t sample_next(const at::Tensor& logits, const SamplingOptions& opt, at::Generator& gen) {
  auto l = logits.detach().to(at::kDouble).reshape({-1});  // [V]
  if (opt.temperature == 0) return l.argmax().item<int64_t>();
  l = l / opt.temperature;
  if (opt.top_k > 0 && opt.top_k < l.size(0)) {
    const auto kth = std::get<0>(l.topk(opt.top_k)).min();
    l = l.masked_fill(l < kth, -std::numeric_limits<double>::infinity());
  }
  const auto p = at::softmax(l, 0);
  return at::multinomial(p, 1, /*replacement=*/false, gen).item<int64_t>();
}

std::vector<int64_t> generate_tokens(LanguageModel& model, const std::vector<int64_t>& prompt, int64_t n,
                                     const SamplingOptions& opt) {
  validate_sampling(opt);
  if (prompt.empty()) throw InputError("the prompt has no tokens");
  if (const auto why = model->incremental_unsupported(); !why.empty()) throw InputError(why);
  at::NoGradGuard no_grad;
  const bool was_training = model->is_training();
  model->eval();
  auto gen = at::make_generator<at::CPUGeneratorImpl>(opt.seed);
  const int64_t max_len = model->config().max_len;
  std::vector<int64_t> context = prompt, out;
  auto ids_of = [](const std::vector<int64_t>& v, size_t from) {
    return at::tensor(std::vector<int64_t>(v.begin() + static_cast<std::ptrdiff_t>(from), v.end()), at::kLong)
        .view({1, -1});
  };
  // Prefill with the last max_len ids of the prompt (at most), then step.
  LmState state = model->init_state();
  size_t from = context.size() > static_cast<size_t>(max_len) ? context.size() - static_cast<size_t>(max_len) : 0;
  at::Tensor logits = model->step(ids_of(context, from), state);  // [1, n, V]
  for (int64_t i = 0; i < n; ++i) {
    const int64_t next = sample_next(logits[0][logits.size(1) - 1], opt, gen);
    out.push_back(next);
    context.push_back(next);
    if (i + 1 == n) break;
    if (state.offset >= max_len) {  // positions end: restart from the last max_len / 2 ids
      state = model->init_state();
      logits = model->step(ids_of(context, context.size() - static_cast<size_t>(std::max<int64_t>(1, max_len / 2))),
                           state);
    } else {
      logits = model->step(at::tensor({next}, at::kLong).view({1, 1}), state);
    }
  }
  model->train(was_training);
  return out;
}

}  // namespace grassaudit
