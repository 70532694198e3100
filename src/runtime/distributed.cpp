#include "runtime/distributed.h"
#include "runtime/torch_compat.h"
#include "util/error_text.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>
#ifdef GRASSAUDIT_C10D
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef USE_C10D_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif
#endif

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <thread>

#include "util/error.h"
#include "util/parse_number.h"
#include "util/sha256.h"

namespace grassaudit::dist {

namespace {
std::string env_value(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}
}  // namespace

bool launched() { return !env_value("RANK").empty() && !env_value("WORLD_SIZE").empty(); }

RowShare row_share(int64_t rows, int r, int world) {
  const int64_t base = rows / world, extra = rows % world;
  RowShare s;
  s.count = base + (r < extra ? 1 : 0);
  s.begin = r * base + std::min<int64_t>(r, extra);
  return s;
}

RowShare row_share(int64_t rows) { return row_share(rows, rank(), world_size()); }

#ifdef GRASSAUDIT_C10D
namespace {

using std::chrono::milliseconds;

struct Group {
  bool joined = false;
  int rank = 0, world = 1;
  double timeout_s = kDefaultTimeoutSeconds;
  bool agent_store = false;  // torchrun's agent hosts the store (not rank 0)
  std::string master;        // "host:port", for messages
  c10::intrusive_ptr<c10d::Store> store;
  // The concrete backends, not c10d::ProcessGroup: in LibTorch 1.13 they derive from
  // ProcessGroup, in 2.x from c10d::Backend; their collectives have the same signatures in both.
  c10::intrusive_ptr<c10d::ProcessGroupGloo> gloo;
#ifdef USE_C10D_NCCL
  c10::intrusive_ptr<c10d::ProcessGroupNCCL> nccl;
#endif

  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& v, const c10d::AllreduceOptions& o) {
#ifdef USE_C10D_NCCL
    if (nccl) return on_cuda(v, [&](std::vector<at::Tensor>& c) { return nccl->allreduce(c, o); });
#endif
    return gloo->allreduce(v, o);
  }
  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& v, const c10d::BroadcastOptions& o) {
#ifdef USE_C10D_NCCL
    if (nccl) return on_cuda(v, [&](std::vector<at::Tensor>& c) { return nccl->broadcast(c, o); });
#endif
    return gloo->broadcast(v, o);
  }
#ifdef USE_C10D_NCCL
  // NCCL reduces CUDA tensors only: the small CPU ones (votes, sums, RNG state) go through a
  // CUDA copy and back (waited for here).
  template <class Op>
  c10::intrusive_ptr<c10d::Work> on_cuda(std::vector<at::Tensor>& v, Op op) {
    bool all_cuda = true;
    for (const auto& t : v) all_cuda = all_cuda && t.is_cuda();
    if (all_cuda) return op(v);
    std::vector<at::Tensor> c;
    for (const auto& t : v) c.push_back(t.is_cuda() ? t : t.to(at::Device(at::kCUDA, 0)));
    auto work = op(c);
    work->wait(std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000)));
    for (size_t i = 0; i < v.size(); ++i)
      if (!v[i].is_cuda()) v[i].copy_(c[i].cpu());
    return work;
  }
#endif
};

Group& group() {
  static Group g;
  return g;
}

std::string env_or_empty(const char* name) { return env_value(name); }

int64_t env_int(const char* name, int64_t lo, int64_t hi) {
  const std::string v = env_or_empty(name);
  const std::optional<long long> x = parse_whole_integer(v);
  if (x && *x >= lo && *x <= hi) return *x;
  throw InputError(fmt::format("environment variable {}='{}' must be an integer in [{}, {}]", name, v, lo, hi));
}

milliseconds timeout_ms() { return milliseconds(static_cast<int64_t>(group().timeout_s * 1000)); }

// Asks every rank to check in under a fresh key; the ranks that do not within a few seconds are
// the lost ones. A store that cannot be reached means its host is gone: rank 0 (or torchrun's
// agent, when it hosts the store).
[[noreturn]] void raise_rank_lost(const std::string& during, const std::string& cause) {
  Group& g = group();
  std::string lost;
  try {
    g.store->setTimeout(milliseconds(5000));
    g.store->set(fmt::format("grassaudit/alive/{}", g.rank), std::vector<uint8_t>{1});
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    std::vector<int> missing;
    do {
      missing.clear();
      for (int r = 0; r < g.world; ++r)
        if (!g.store->check({fmt::format("grassaudit/alive/{}", r)})) missing.push_back(r);
      if (missing.empty()) break;
      std::this_thread::sleep_for(milliseconds(200));
    } while (std::chrono::steady_clock::now() < until);
    for (int r : missing) lost += (lost.empty() ? "" : ", ") + std::to_string(r);
    if (lost.empty()) lost = "none found (every rank answered)";
  } catch (const std::exception&) {
    lost = g.agent_store ? "unknown (torchrun's store is unreachable)" : "0 (it hosted the c10d store)";
  }
  throw RankLostError(fmt::format("rank {}: lost rank {} during {} (c10d: {}); resume from the last checkpoint "
                                  "with --resume",
                                  g.rank, lost, during, first_line(cause)));
}

void wait_for(const c10::intrusive_ptr<c10d::Work>& work, const char* what) {
  try {
    work->wait(timeout_ms());
  } catch (const std::exception& e) {
    raise_rank_lost(what, e.what());
  }
}

void allreduce(at::Tensor& t, c10d::ReduceOp op, const char* what) {
  if (!active()) return;
  std::vector<at::Tensor> v{t};
  c10d::AllreduceOptions o;
  o.reduceOp = op;
  o.timeout = timeout_ms();
  wait_for(group().allreduce(v, o), what);
}

bool loopback(const std::string& host) {
  return host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1";
}

c10::intrusive_ptr<c10d::Store> make_store(const std::string& host, int port, int rank, int world, bool agent) {
  c10d::TCPStoreOptions o;
  o.port = static_cast<uint16_t>(port);
  o.isServer = !agent && rank == 0;
  o.numWorkers = agent ? c10::nullopt : c10::optional<std::size_t>(world);
  o.waitWorkers = !agent;
  o.timeout = timeout_ms();
  o.multiTenant = !agent;
#if GRASSAUDIT_TCPSTORE_HAS_LIBUV
  o.useLibUV = false;  // runtime/torch_compat.h: the classic store, as on 1.13
#endif
  c10::intrusive_ptr<c10d::Store> store;
  try {
    const QuietC10Logs quiet;  // the failure is our one line below, not c10's retry log
    store = c10::make_intrusive<c10d::TCPStore>(host, o);
  } catch (const std::exception& e) {
    // 2.x's c10 errors carry their backtrace in what(); the message is what_without_backtrace().
    const auto* c10e = dynamic_cast<const c10::Error*>(&e);
    std::string why = first_meaningful_line(c10e ? c10e->what_without_backtrace() : e.what());
    if (why.empty()) why = "no reason given";
    if (o.isServer && (why.find("in use") != std::string::npos || why.find("bind") != std::string::npos))
      throw InputError(fmt::format("rank 0 cannot host the c10d store on port {} (in use?): {}; set another "
                                   "MASTER_PORT",
                                   port, why));
    throw InputError(fmt::format("rank {} could not set up the c10d store at {}:{} within {:g} s (wrong MASTER_ADDR "
                                 "or MASTER_PORT, or a rank did not start): {}",
                                 rank, host, port, group().timeout_s, why));
  }
  if (agent) {
    const std::string attempt = env_or_empty("TORCHELASTIC_RESTART_COUNT");
    store = c10::make_intrusive<c10d::PrefixStore>("/worker/attempt_" + (attempt.empty() ? "0" : attempt), store);
  }
  return store;
}

}  // namespace

void init_from_env(const std::string& device, double timeout_seconds) {
  Group& g = group();
  if (g.joined || !launched()) return;
  if (!(timeout_seconds > 0)) throw InputError(fmt::format("--dist-timeout must be > 0 seconds, got {}", timeout_seconds));
  const int world = static_cast<int>(env_int("WORLD_SIZE", 1, 1 << 20));
  const int rank = static_cast<int>(env_int("RANK", 0, world - 1));
  if (world == 1) {  // a group of one: nothing to talk to
    g.joined = true;
    return;
  }
  const std::string host = env_or_empty("MASTER_ADDR");
  if (host.empty()) throw InputError("RANK and WORLD_SIZE are set but MASTER_ADDR is not (env:// needs all of them)");
  const int port = static_cast<int>(env_int("MASTER_PORT", 1, 65535));
  g.timeout_s = timeout_seconds;
  g.rank = rank;
  g.world = world;
  g.master = fmt::format("{}:{}", host, port);
  g.agent_store = env_or_empty("TORCHELASTIC_USE_AGENT_STORE") == "True";
  // Gloo and the store write to their peers' sockets without MSG_NOSIGNAL on some builds (Debian 13's
  // 2.6): a peer that died would end this rank with SIGPIPE before it could name the lost rank.
  // Ignored, the write fails with EPIPE and the collective's error reaches raise_rank_lost, as Python
  // launchers get it (the interpreter ignores SIGPIPE too).
  std::signal(SIGPIPE, SIG_IGN);
  g.store = make_store(host, port, rank, world, g.agent_store);
  try {
    if (device == "cuda") {
#ifdef USE_C10D_NCCL
      auto o = c10d::ProcessGroupNCCL::Options::create();
      o->timeout = timeout_ms();
      g.nccl = c10::make_intrusive<c10d::ProcessGroupNCCL>(g.store, rank, world, o);
#else
      throw InputError("--device cuda with several ranks needs NCCL, which this LibTorch build does not have");
#endif
    } else {
      auto o = c10d::ProcessGroupGloo::Options::create(timeout_ms());
      const std::string ifname = env_or_empty("GLOO_SOCKET_IFNAME");
      if (!ifname.empty()) o->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(ifname));
      else if (loopback(host)) o->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
      else o->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
      o->threads = 1;
      g.gloo = c10::make_intrusive<c10d::ProcessGroupGloo>(g.store, rank, world, o);
    }
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {
    throw InputError(fmt::format("rank {} could not join the process group of {} ranks at {}: {}", rank, world,
                                 g.master, first_line(e.what())));
  }
  g.joined = true;
}

bool active() {
#ifdef USE_C10D_NCCL
  if (group().nccl.defined()) return true;
#endif
  return group().gloo.defined();
}
int rank() { return group().rank; }
int world_size() { return group().world; }
bool is_main() { return group().rank == 0; }
double timeout_seconds() { return group().timeout_s; }

void allreduce_sum(at::Tensor& t) { allreduce(t, c10d::ReduceOp::SUM, "an all-reduce (sum)"); }
void allreduce_max(at::Tensor& t) { allreduce(t, c10d::ReduceOp::MAX, "an all-reduce (max)"); }

void broadcast(at::Tensor& t, int root) {
  if (!active()) return;
  std::vector<at::Tensor> v{t};
  c10d::BroadcastOptions o;
  o.rootRank = root;
  o.timeout = timeout_ms();
  wait_for(group().broadcast(v, o), "a broadcast");
}

namespace {
double g_sync_seconds = 0;
struct SyncClock {
  std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
  ~SyncClock() { g_sync_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); }
};
}  // namespace

double gradient_sync_seconds() { return g_sync_seconds; }

double allreduce_gradients(const std::vector<at::Tensor>& params, double scale, double loss_share,
                           int64_t bucket_bytes) {
  if (!active()) return loss_share;
  const SyncClock clock;
  // meta: [loss share, one "has a gradient" flag per parameter], float64.
  const int64_t P = static_cast<int64_t>(params.size());
  auto meta = at::zeros({P + 1}, at::kDouble);
  double* m = meta.data_ptr<double>();
  m[0] = loss_share;
  for (int64_t i = 0; i < P; ++i) m[i + 1] = params[i].grad().defined() ? 1.0 : 0.0;
  allreduce_sum(meta);
  // Buckets of consecutive parameters: each flattened, scaled, summed, copied back. All are sent
  // before the first is waited for, so Gloo works on bucket k+1 while k is being copied back.
  struct Bucket {
    std::vector<int64_t> members;
    at::Tensor flat;
    c10::intrusive_ptr<c10d::Work> work;
  };
  std::vector<Bucket> buckets;
  int64_t bytes = bucket_bytes;
  for (int64_t i = 0; i < P; ++i) {
    if (m[i + 1] == 0) continue;  // undefined everywhere: left undefined, as one process leaves it
    const int64_t b = params[i].numel() * static_cast<int64_t>(params[i].element_size());
    if (buckets.empty() || bytes + b > bucket_bytes) {
      buckets.emplace_back();
      bytes = 0;
    }
    buckets.back().members.push_back(i);
    bytes += b;
  }
  for (auto& bucket : buckets) {
    std::vector<at::Tensor> parts;
    for (int64_t i : bucket.members) {
      const auto& p = params[i];
      parts.push_back(p.grad().defined() ? p.grad().reshape({-1}) : at::zeros({p.numel()}, p.options()));
    }
    bucket.flat = at::cat(parts);
    if (scale != 1.0) bucket.flat.mul_(scale);
    std::vector<at::Tensor> v{bucket.flat};
    c10d::AllreduceOptions o;
    o.reduceOp = c10d::ReduceOp::SUM;
    o.timeout = timeout_ms();
    bucket.work = group().allreduce(v, o);
  }
  for (auto& bucket : buckets) {
    wait_for(bucket.work, "the gradient all-reduce");
    int64_t offset = 0;
    for (int64_t i : bucket.members) {
      at::Tensor p = params[i];
      const int64_t n = p.numel();
      auto summed = bucket.flat.narrow(0, offset, n).view(p.sizes());
      if (p.grad().defined()) p.mutable_grad().copy_(summed);
      else p.mutable_grad() = summed.clone();
      offset += n;
    }
  }
  return m[0];
}

void broadcast_cpu_rng() {
  if (!active()) return;
  at::Generator gen = at::detail::getDefaultCPUGenerator();
  at::Tensor state = gen.get_state().clone();
  broadcast(state, 0);
  gen.set_state(state);
}

void broadcast_tensors(const std::vector<at::Tensor>& tensors) {
  if (!active()) return;
  at::NoGradGuard no_grad;
  for (at::Tensor t : tensors) {
    at::Tensor c = t.contiguous();
    broadcast(c, 0);
    if (!c.is_same(t)) t.copy_(c);
  }
}

void check_same_everywhere(const std::string& what, const std::string& value) {
  if (!active()) return;
  Group& g = group();
  const std::string mine = sha256_hex(value);
  static int round = 0;
  const std::string prefix = fmt::format("grassaudit/same/{}/{}/", round++, what);
  std::vector<std::string> keys;
  for (int r = 0; r < g.world; ++r) keys.push_back(prefix + std::to_string(r));
  try {
    g.store->set(keys[g.rank], std::vector<uint8_t>(mine.begin(), mine.end()));
    g.store->wait(keys, timeout_ms());
  } catch (const std::exception& e) {
    raise_rank_lost(fmt::format("the {} check", what), e.what());
  }
  std::string mismatch;
  for (int r = 0; r < g.world && mismatch.empty(); ++r) {
    auto v = g.store->get(keys[r]);
    const std::string theirs(v.begin(), v.end());
    if (theirs != mine)
      mismatch = fmt::format("rank {} and rank {} were started with different {} (SHA-256 {} vs {}); start every "
                             "rank with the same flags",
                             g.rank, r, what, mine.substr(0, 12), theirs.substr(0, 12));
  }
  // Rank 0 may host the store: it leaves only once every rank has read the hashes, so the others
  // report the mismatch too, not a lost rank 0.
  try {
    g.store->add(prefix + "read", 1);
    const auto until = std::chrono::steady_clock::now() + timeout_ms();
    while (g.rank == 0 && g.store->add(prefix + "read", 0) < g.world && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(milliseconds(20));
  } catch (const std::exception& e) {
    raise_rank_lost(fmt::format("the {} check", what), e.what());
  }
  if (!mismatch.empty()) throw InputError(mismatch);
}

void barrier() {
  if (!active()) return;
  auto t = at::zeros({1}, at::kFloat);
  allreduce_sum(t);
}

#else  // !GRASSAUDIT_C10D: a LibTorch without the gloo headers (src/CMakeLists.txt); one process only

void init_from_env(const std::string&, double) {
  if (launched() && env_value("WORLD_SIZE") != "1")
    throw InputError("this grassaudit was built without c10d (no gloo headers beside LibTorch; on Debian install "
                     "libgloo-dev and rebuild): it cannot run data-parallel");
}
bool active() { return false; }
int rank() { return 0; }
int world_size() { return 1; }
bool is_main() { return true; }
double timeout_seconds() { return kDefaultTimeoutSeconds; }
void allreduce_sum(at::Tensor&) {}
void allreduce_max(at::Tensor&) {}
void broadcast(at::Tensor&, int) {}
double allreduce_gradients(const std::vector<at::Tensor>&, double, double loss_share, int64_t) { return loss_share; }
double gradient_sync_seconds() { return 0; }
void broadcast_cpu_rng() {}
void broadcast_tensors(const std::vector<at::Tensor>&) {}
void check_same_everywhere(const std::string&, const std::string&) {}
void barrier() {}

#endif  // GRASSAUDIT_C10D

}  // namespace grassaudit::dist
