#pragma once
// Data parallelism on PyTorch's c10d (ProcessGroupGloo on CPU, NCCL on CUDA where LibTorch has
// it), started by torchrun or any launcher that sets the env:// variables RANK, WORLD_SIZE,
// LOCAL_RANK, MASTER_ADDR and MASTER_PORT. Without them every function here is the identity of a
// one-process world (rank 0 of 1) and nothing is opened.
//
// The store is made as init_process_group("env://") makes it: rank 0 hosts a TCPStore on
// MASTER_ADDR:MASTER_PORT and the others connect, except under torchrun's agent
// (TORCHELASTIC_USE_AGENT_STORE=True), where the agent hosts it and every rank is a client under
// the prefix "/worker/attempt_<restart count>".
//
// Failures: every collective waits at most the c10d timeout (--dist-timeout); a rank that is gone
// (killed, crashed) makes the others throw RankLostError naming it. Bad launch settings (a port
// in use, an unreachable MASTER_ADDR, ranks with different configs) are InputError (exit 2).
#include <cstdint>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

namespace grassaudit::dist {

// The default of --dist-timeout: seconds any collective or store operation may wait for the
// other ranks before the run ends with an error naming the missing rank.
constexpr double kDefaultTimeoutSeconds = 300;

class RankLostError : public std::runtime_error {
 public:
  explicit RankLostError(const std::string& what) : std::runtime_error(what) {}
};

// True when the env:// variables say this process is one rank of a launched group.
bool launched();

// Joins the group described by the env:// variables (no-op when !launched(), or when already
// joined). device: "cpu" (Gloo) or "cuda" (NCCL if this LibTorch has it). InputError for bad or
// conflicting settings.
void init_from_env(const std::string& device, double timeout_seconds);

bool active();       // a group of more than one rank is joined
int rank();          // 0 when not active
int world_size();    // 1 when not active
bool is_main();      // rank() == 0: the rank that writes files and prints
double timeout_seconds();

// This rank's contiguous share of `rows` rows (global batch semantics): ranks below rows %
// world get one row more, so rank 0 always has a row when rows > 0.
struct RowShare {
  int64_t begin = 0, count = 0;
};
RowShare row_share(int64_t rows);
RowShare row_share(int64_t rows, int rank, int world);

// In-place collectives over every rank (identity when not active). Tensors must be contiguous,
// CPU (or all on the group's device), of the same shape on every rank.
void allreduce_sum(at::Tensor& t);
void allreduce_max(at::Tensor& t);
void broadcast(at::Tensor& t, int root = 0);

// Sums each parameter's gradient over the ranks, each first scaled by `scale` (this rank's share
// of the global loss), in flat buckets of about bucket_bytes. A gradient undefined on every rank
// stays undefined (as one process would leave it); undefined on some ranks counts as zero there.
// Also sums `loss_share` (this rank's loss times its share) and returns the global loss.
constexpr int64_t kDefaultBucketBytes = 25 << 20;  // as DistributedDataParallel
double allreduce_gradients(const std::vector<at::Tensor>& params, double scale, double loss_share,
                           int64_t bucket_bytes = kDefaultBucketBytes);

// Wall seconds this process has spent in allreduce_gradients (flattening, the all-reduce
// including any wait for a slower rank, copying back): the communication share of the steps.
double gradient_sync_seconds();

// Makes every rank's global CPU generator equal to rank 0's.
void broadcast_cpu_rng();

// Parameters and buffers equal to rank 0's on every rank (after building or loading a model).
void broadcast_tensors(const std::vector<at::Tensor>& tensors);

// InputError on every rank unless `value` (e.g. the resolved config, JSON) is the same on all
// ranks; compared by SHA-256 through the store. `what` names it in the message.
void check_same_everywhere(const std::string& what, const std::string& value);

// Waits for every rank (store-based, with the c10d timeout).
void barrier();

}  // namespace grassaudit::dist
