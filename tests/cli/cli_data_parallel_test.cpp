// Data-parallel training on c10d, with 2 local ranks on loopback, on a small fake
// corpus (seconds per run). The ranks are started the way torchrun starts them: the env://
// variables RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT (plus one torchrun run when
// Debian's python3-torch is installed). Checked:
//  * 1 process and 2 ranks at the same global batch, seed and dropout give the same training
//    losses (<= 1e-4 relative) and, on the same weights, the same perplexities (<= 1e-6);
//  * rank 0 alone writes; summary.json records world_size;
//  * a 2-rank run resumes in 1 process and ends on the uninterrupted run's losses;
//  * SIGKILL of a rank: the other exits non-zero within the c10d timeout, naming the lost rank;
//    the checkpoint left loads and resumes; SIGTERM to one rank stops both, with a checkpoint;
//  * a port in use, an unreachable store, different configs: exit 2 with one line;
//  * grassaudit audit over 2 ranks: the one-process result, field for field.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "cli_checkpoints.h"
#include "cli_support.h"

namespace grassaudit::clitest {
namespace {

using nlohmann::json;
using Env = std::vector<std::pair<std::string, std::string>>;

// Global batch 6 over 2 ranks (3 rows each), dropout on; 2 epochs so resumes cross an epoch end.
json dp_config(double lr = 0.001) {
  json j = json::parse(R"({
    "model": {"mixer": "past", "d_model": 16, "rank": 4, "layers": 2, "max_len": 16, "heads": 2, "d_ff": 32,
              "dropout": 0.1, "eps": 1e-8, "offsets": [1, 2], "offset_mode": "per-layer"},
    "train": {"tokenizer": "word", "seq_len": 16, "batch": 6, "epochs": 2, "warmup_steps": 3,
              "log_every": 1, "checkpoint_every": 1, "eval_batch": 8, "eval_max_tokens": 512,
              "audit_trials": 1, "audit_batch": 8, "seed": 7}
  })");
  j["train"]["lr"] = lr;
  return j;
}

// A TCP port nobody listens on now (the kernel's choice for port 0).
int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    throw std::runtime_error("no free port");
  const int port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

Env rank_env(int rank, int world, int port, const std::string& addr = "127.0.0.1") {
  return {{"RANK", std::to_string(rank)},     {"WORLD_SIZE", std::to_string(world)},
          {"LOCAL_RANK", std::to_string(rank)}, {"MASTER_ADDR", addr},
          {"MASTER_PORT", std::to_string(port)}};
}

struct Fixture {
  TempDir t;
  Cli cli{t};
  std::string data = t.file("data");
  int counter = 0;
  Fixture() { make_fake_data(data, 300, 60); }
  std::string config(const json& j) {
    const std::string path = t.file(fmt::format("config-{}.json", ++counter));
    write_text(path, j.dump(2));
    return path;
  }
  std::vector<std::string> fresh(const std::string& config, const std::string& out) const {
    return {"train", "--config", config, "--data-dir", data, "--allow-other-data", "--out", out,
            "--threads", "1", "--dist-timeout", "20"};
  }
  std::vector<std::string> resume(const std::string& out) const {
    return {"train", "--resume", out + "/checkpoints/last.ckpt", "--data-dir", data, "--allow-other-data",
            "--threads", "1", "--dist-timeout", "20"};
  }
  // Runs `args` as ranks 0..world-1 of one group; returns their results, rank order.
  std::vector<RunResult> ranks(const std::vector<std::vector<std::string>>& args, double timeout_s = 60) {
    const int port = free_port(), world = static_cast<int>(args.size());
    std::vector<Process> ps;
    for (int r = 0; r < world; ++r)
      ps.push_back(spawn(args[r], t.file(fmt::format("io-rank{}-{}", r, ++counter)), cli.cache(),
                         rank_env(r, world, port)));
    std::vector<RunResult> out;
    for (auto& p : ps) out.push_back(finish(p, timeout_s));
    return out;
  }
};

// Every rank exited 0; otherwise each failed rank's output (the first error is often another
// rank's).
::testing::AssertionResult AllSucceeded(const std::vector<RunResult>& rs) {
  auto f = ::testing::AssertionFailure();
  bool ok = true;
  for (size_t r = 0; r < rs.size(); ++r)
    if (rs[r].status != 0) {
      ok = false;
      f << "rank " << r << ": " << show(rs[r]) << "\n";
    }
  return ok ? ::testing::AssertionSuccess() : f;
}

struct Records {
  std::vector<std::pair<int64_t, double>> train;  // (step, loss)
  std::vector<double> eval;                       // eval losses in file order
};

Records read_records(const std::string& out) {
  Records r;
  for (const auto& line : lines_of(read_text(out + "/metrics.jsonl"))) {
    json j = json::parse(line);
    if (j["type"] == "train") r.train.emplace_back(j["step"].get<int64_t>(), j["loss"].get<double>());
    if (j["type"] == "eval") r.eval.push_back(j["loss"].get<double>());
  }
  return r;
}

double rel(double a, double b) { return std::abs(a - b) / std::max(std::abs(b), 1e-30); }

::testing::AssertionResult SameLosses(const Records& got, const Records& want, double tol, size_t first_steps) {
  if (got.train.size() != want.train.size())
    return ::testing::AssertionFailure() << got.train.size() << " vs " << want.train.size() << " train records";
  double worst = 0;
  for (size_t i = 0; i < got.train.size() && i < first_steps; ++i) {
    if (got.train[i].first != want.train[i].first) return ::testing::AssertionFailure() << "step order differs at " << i;
    const double d = rel(got.train[i].second, want.train[i].second);
    worst = std::max(worst, d);
    if (!(d <= tol))
      return ::testing::AssertionFailure() << "step " << got.train[i].first << ": loss " << got.train[i].second
                                           << " vs " << want.train[i].second << " (relative " << d << ")";
  }
  std::cerr << "worst relative loss difference over " << std::min(first_steps, got.train.size())
            << " steps: " << worst << "\n";
  return ::testing::AssertionSuccess();
}

TEST(DataParallel, TwoRanksTrainLikeOneProcessWithDropout) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  Fixture f;
  const std::string cfg = f.config(dp_config());
  const std::string one = f.t.file("one"), two = f.t.file("two");
  auto r1 = f.cli.run(f.fresh(cfg, one));
  ASSERT_EQ(r1.status, 0) << show(r1);
  auto rs = f.ranks({f.fresh(cfg, two), f.fresh(cfg, two)});
  ASSERT_TRUE(AllSucceeded(rs));
  const Records a = read_records(one), b = read_records(two);
  ASSERT_GT(a.train.size(), 10u);
  EXPECT_TRUE(SameLosses(b, a, 1e-4, 10));  // the first steps, as the issue asks
  // Rank 0 alone printed the run; the other rank printed nothing.
  EXPECT_NE(rs[0].out.find("resolved config"), std::string::npos);
  EXPECT_EQ(rs[1].out, "");
  EXPECT_EQ(rs[1].err, "");
  const json s1 = json::parse(read_text(one + "/summary.json")), s2 = json::parse(read_text(two + "/summary.json"));
  EXPECT_EQ(s1["world_size"], 1);
  EXPECT_EQ(s2["world_size"], 2);
  EXPECT_EQ(s2["provenance"]["world_size"], 2);
  EXPECT_EQ(s1["steps"], s2["steps"]);
  EXPECT_EQ(s1["tokens_seen"], s2["tokens_seen"]);
  EXPECT_TRUE(NoTempFiles(two));
}

TEST(DataParallel, ShardedEvaluationGivesOneProcessPerplexity) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  Fixture f;
  // One checkpoint after 10 steps (mid-epoch: nothing evaluated yet), resumed twice with no step
  // left to take, by 1 process and by 2 ranks: both evaluate the same weights (validation, then
  // test), so the sharded sums must give the one-process perplexities.
  const std::string cfg = f.config(dp_config());
  const std::string base = f.t.file("base"), one = f.t.file("one"), two = f.t.file("two");
  auto args = f.fresh(cfg, base);
  args.insert(args.end(), {"--max-tokens", "960"});
  auto r0 = f.cli.run(args);
  ASSERT_EQ(r0.status, 0) << show(r0);
  for (const auto& dir : {one, two}) {
    fs::create_directories(dir + "/checkpoints");
    fs::copy_file(base + "/checkpoints/last.ckpt", dir + "/checkpoints/last.ckpt");
  }
  auto r1 = f.cli.run(f.resume(one));
  ASSERT_EQ(r1.status, 0) << show(r1);
  auto rs = f.ranks({f.resume(two), f.resume(two)});
  ASSERT_TRUE(AllSucceeded(rs));
  const json s1 = json::parse(read_text(one + "/summary.json")), s2 = json::parse(read_text(two + "/summary.json"));
  for (const char* key : {"best_valid_ppl", "test_ppl"}) {
    ASSERT_TRUE(s1.contains(key) && s2.contains(key)) << key;
    EXPECT_LE(rel(s2[key].get<double>(), s1[key].get<double>()), 1e-6) << key << " " << s2[key] << " vs " << s1[key];
  }
  EXPECT_EQ(s1["test_tokens"], s2["test_tokens"]);
  EXPECT_EQ(s1["audit"], s2["audit"]);  // the same weights, verdict and horizon
  EXPECT_EQ(s2["world_size"], 2);
}

TEST(DataParallel, TwoRankCheckpointResumesInOneProcess) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  Fixture f;
  json j = dp_config();
  const std::string cfg = f.config(j);
  const std::string one = f.t.file("one"), two = f.t.file("two");
  auto r1 = f.cli.run(f.fresh(cfg, one));
  ASSERT_EQ(r1.status, 0) << show(r1);
  // 2 ranks stop after 10 steps (60 rows of 16 tokens), then 1 process finishes the run.
  auto args = f.fresh(cfg, two);
  args.insert(args.end(), {"--max-tokens", "960"});
  auto rs = f.ranks({args, args});
  ASSERT_TRUE(AllSucceeded(rs));
  auto resume = f.resume(two);
  resume.insert(resume.end(), {"--max-tokens", "0"});  // lifts the first session's limit
  auto rr = f.cli.run(resume);
  ASSERT_EQ(rr.status, 0) << show(rr);
  const Records a = read_records(one), b = read_records(two);
  // Not bit for bit: 2 ranks sum their gradients in another order than one process. Measured
  // here, the losses of the two runs stay within ~1e-7 relative over the run's ~60 steps
  // (scripts/README.md); 1e-4 leaves three orders of magnitude for other CPUs' rounding.
  EXPECT_TRUE(SameLosses(b, a, 1e-4, 1000));
  EXPECT_EQ(json::parse(read_text(two + "/summary.json"))["world_size"], 1);
}

TEST(DataParallel, KilledRankEndsTheOtherWithOneLineAndTheRunResumes) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  Fixture f;
  json j = dp_config();
  j["train"]["epochs"] = 40;  // long enough to be killed mid-run
  const std::string cfg = f.config(j);
  const std::string out = f.t.file("run");
  const int port = free_port();
  Process r0 = spawn(f.fresh(cfg, out), f.t.file("io-r0"), f.cli.cache(), rank_env(0, 2, port));
  Process r1 = spawn(f.fresh(cfg, out), f.t.file("io-r1"), f.cli.cache(), rank_env(1, 2, port));
  const auto t0 = std::chrono::steady_clock::now();
  while (read_records(out).train.size() < 5) {
    ASSERT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 40);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(r1.pid, SIGKILL);
  const auto killed = std::chrono::steady_clock::now();
  RunResult k = finish(r1, 10);
  EXPECT_EQ(k.signal, SIGKILL);
  RunResult s = finish(r0, 40);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
  EXPECT_LT(took, 30) << "the survivor must end within the c10d timeout (20 s) plus the roll call";
  EXPECT_TRUE(IsOneLineError(s, "train", {"lost rank 1"}, /*only_line=*/false));
  EXPECT_TRUE(NoTempFiles(out));
  std::string why;
  ASSERT_TRUE(checkpoint_loads(out + "/checkpoints/last.ckpt", &why)) << why;
  // The run continues from its last checkpoint (here in one process, a few steps).
  auto args = f.resume(out);
  args.insert(args.end(), {"--max-tokens", "2880"});
  auto rr = f.cli.run(args);
  EXPECT_EQ(rr.status, 0) << show(rr);
}

TEST(DataParallel, SignalToOneRankStopsBothAtTheSameStepWithACheckpoint) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  Fixture f;
  json j = dp_config();
  j["train"]["epochs"] = 40;
  j["train"]["checkpoint_every"] = 0;  // the only last.ckpt is the one the signal makes rank 0 write
  const std::string cfg = f.config(j);
  const std::string out = f.t.file("run");
  const int port = free_port();
  Process r0 = spawn(f.fresh(cfg, out), f.t.file("io-r0"), f.cli.cache(), rank_env(0, 2, port));
  Process r1 = spawn(f.fresh(cfg, out), f.t.file("io-r1"), f.cli.cache(), rank_env(1, 2, port));
  const auto t0 = std::chrono::steady_clock::now();
  while (read_records(out).train.size() < 5) {
    ASSERT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 40);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(r1.pid, SIGTERM);  // rank 1 only: the ranks agree on stopping before the same step
  RunResult a = finish(r0, 40), b = finish(r1, 40);
  EXPECT_EQ(a.status, 0) << show(a);
  EXPECT_EQ(b.status, 0) << show(b);
  EXPECT_NE(a.err.find("stopped by a signal to another rank"), std::string::npos) << a.err;
  std::string why;
  ASSERT_TRUE(checkpoint_loads(out + "/checkpoints/last.ckpt", &why)) << why;
  auto args = f.resume(out);
  args.insert(args.end(), {"--max-tokens", "2880"});
  auto rr = f.cli.run(args);
  EXPECT_EQ(rr.status, 0) << show(rr);
}

TEST(DataParallel, LaunchErrorsExit2WithOneLine) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  Fixture f;
  const std::string cfg = f.config(dp_config());
  {  // the port is taken: rank 0 cannot host the store
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    a.sin_port = 0;
    socklen_t len = sizeof a;
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    ASSERT_EQ(::listen(fd, 4), 0);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    auto r = f.cli.run(f.fresh(cfg, f.t.file("a")), 30, rank_env(0, 2, ntohs(a.sin_port)));
    ::close(fd);
    EXPECT_TRUE(IsOneLineError(r, "train", {"port", "MASTER_PORT"}, false));
  }
  {  // nobody hosts the store at MASTER_ADDR:MASTER_PORT: rank 1 gives up after the timeout
    auto args = f.fresh(cfg, f.t.file("b"));
    args.back() = "3";  // --dist-timeout 3
    auto r = f.cli.run(args, 30, rank_env(1, 2, free_port()));
    EXPECT_TRUE(IsOneLineError(r, "train", {"c10d store", "MASTER_ADDR"}, false));
    EXPECT_LT(r.seconds, 20);
  }
  {  // ranks started with different configs (another seed)
    json other = dp_config();
    other["train"]["seed"] = 8;
    const std::string cfg2 = f.config(other);
    auto rs = f.ranks({f.fresh(cfg, f.t.file("c")), f.fresh(cfg2, f.t.file("c"))}, 40);
    for (const auto& r : rs) EXPECT_TRUE(IsOneLineError(r, "train", {"different configs"}, false));
    EXPECT_FALSE(fs::exists(f.t.file("c") + "/metrics.jsonl"));
  }
}

// grassaudit audit divided over 2 ranks: the same result as one process, field for field (a
// leaky mixer, so horizons and the leak map are non-trivial, and a causal one). Exact on any CPU:
// the same binary at --threads 1 runs the same rows in passes of the same shapes on every rank,
// and the tables are reduced by max, which rounds nothing (src/audit/audit_shard.h).
TEST(DataParallel, ShardedAuditGivesTheOneProcessResult) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  Fixture f;
  for (const std::string mixer : {"future", "past"}) {
    auto args = [&](const std::string& json_path) {
      return std::vector<std::string>{"audit", "--mixer", mixer, "--d-model", "16", "--layers", "2", "--max-len", "16", "--offsets", "1,2",
                                      "--batch", "8", "--trials", "2", "--threads", "1", "--dist-timeout", "20",
                                      "--json", json_path};
    };
    const std::string one = f.t.file(mixer + "-one.json"), two = f.t.file(mixer + "-two.json");
    auto r1 = f.cli.run(args(one));
    const int want = mixer == "future" ? 1 : 0;
    ASSERT_EQ(r1.status, want) << show(r1);
    auto rs = f.ranks({args(two), args(two)});
    for (const auto& r : rs) ASSERT_EQ(r.status, want) << show(r);
    EXPECT_EQ(rs[1].out, "");
    json a = json::parse(read_text(one)), b = json::parse(read_text(two));
    ASSERT_EQ(a["verdict"], mixer == "future" ? "leaky" : "causal");
    for (json* j : {&a, &b}) {  // wall times and a rank's own forwards (its share), the only fields allowed to differ
      j->erase("seconds");
      j->erase("seconds_by_check");
      j->erase("forwards");
    }
    EXPECT_EQ(a, b) << mixer << "\none: " << a.dump() << "\ntwo: " << b.dump();
  }
}

// The launcher users have: Debian's python3-torch (torchrun), --no_python. Skipped without it.
// "--redirects 1 --tee 1": torch 1.13's launcher under Python 3.11 turns its defaults ("0") into
// None (enum flag iteration changed) and crashes before starting anything; stdout redirected and
// teed is the default behaviour plus a log file.
TEST(DataParallel, TorchrunLaunchesTwoRanks) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  if (std::system("/usr/bin/python3 -c 'import torch.distributed.run' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "python3-torch (torchrun) is not installed";
  // Debian 13's python3-torch 2.6 is built without libuv while its Python TCPStore defaults to libuv,
  // and torchrun's static rendezvous passes no use_libuv: the launcher cannot make its own store
  // there ("use_libuv was requested but PyTorch was build without libuv support"). Our ranks do not
  // need it (the other DataParallel tests launch them by the env:// variables on both versions).
  if (std::system("/usr/bin/python3 -c \"import torch.distributed as d; d.TCPStore('127.0.0.1', 0, 1, True)\" "
                  ">/dev/null 2>&1") != 0)
    GTEST_SKIP() << "this python3-torch's torchrun cannot create its TCPStore (built without libuv, "
                    "Debian 13's 2.6): scripts/README.md \"Supported LibTorch versions\"";
  Fixture f;
  json j = dp_config();
  j["train"]["epochs"] = 1;
  const std::string cfg = f.config(j);
  const std::string one = f.t.file("one"), two = f.t.file("two");
  auto r1 = f.cli.run(f.fresh(cfg, one));
  ASSERT_EQ(r1.status, 0) << show(r1);
  const std::string cmd = fmt::format(
      "cd '{}' && OMP_NUM_THREADS=1 GRASSAUDIT_CACHE='{}' /usr/bin/python3 -m torch.distributed.run --redirects 1 --tee 1 --no_python "
      "--nproc_per_node 2 --master_addr 127.0.0.1 --master_port {} '{}' train --config '{}' --data-dir '{}' "
      "--allow-other-data --out '{}' --threads 1 --dist-timeout 20 >'{}' 2>&1",
      f.t.path(), f.cli.cache(), free_port(), GRASSAUDIT_BINARY, cfg, f.data, two, f.t.file("torchrun.log"));
  const int st = std::system(("timeout 90 sh -c \"" + cmd + "\"").c_str());
  ASSERT_EQ(st, 0) << read_text(f.t.file("torchrun.log"));
  EXPECT_TRUE(SameLosses(read_records(two), read_records(one), 1e-4, 10));
  EXPECT_EQ(json::parse(read_text(two + "/summary.json"))["world_size"], 2);
}

}  // namespace
}  // namespace grassaudit::clitest
