#pragma once
// Decode throughput: tokens per second of single-token steps through a model's
// incremental path at a given context length, past (Grassmann buffer) against attention (KV
// cache), in one process with their reps interleaved. Per (mixer, context): prefill the context
// in one step, then time `steps` single-token steps (the head included: what generation pays);
// the state's size in bytes is the memory the incremental path keeps.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "bench/bench_record.h"
#include "core/model_config.h"

namespace grassaudit {

struct DecodeBenchOptions {
  std::vector<std::string> mixers;
  ModelConfig model;              // max_len is raised to max(contexts) + steps
  std::vector<int64_t> contexts{128, 256, 512, 1024, 2048, 4096};
  int64_t steps = 32;             // timed single-token steps per context
  int64_t batch = 1;
  int reps = 3, warmup = 1;
};

// Throughput per decoded token: batch tokens.
struct DecodeTiming : Throughput {
  std::string mixer;
  int64_t context = 0, steps = 0;
  int64_t state_bytes = 0;        // the incremental state after the timed steps
};

// InputError on the first bad value (no mixers, a mixer without an incremental path, contexts < 1).
void check_decode_bench(const DecodeBenchOptions& o);
std::vector<DecodeTiming> bench_decode(const DecodeBenchOptions& o);
nlohmann::json to_json(const DecodeTiming& t);

}  // namespace grassaudit
