// grassaudit train-nli data-parallel: 2 local ranks on loopback (the env://
// variables torchrun sets) against 1 process at the same global batch, seed and dropout, on the
// shared SNLI data (skipped without it). Each rank keeps its rows of the globally padded batch
// and draws the whole batch's dropout masks, so the losses agree to float rounding and the
// sharded evaluation gives the same accuracies.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "nli_test_support.h"

namespace grassaudit {
namespace {

using nlohmann::json;

int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    throw std::runtime_error("no free port");
  const int port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

std::vector<std::string> args(const std::string& head, const std::string& data, const std::string& out) {
  // 60 examples in global batches of 8: the last batch (4 rows) gives each rank 2.
  return {"train-nli", "--head", head, "--data-dir", data, "--out", out, "--epochs", "2", "--seeds", "5",
          "--batch", "8", "--lr", "2e-3", "--max-examples", "60", "--log-every", "1", "--threads", "1",
          "--dist-timeout", "30"};
}

TEST(TrainNliDataParallel, TwoRanksTrainLikeOneProcess) {
  GRASSAUDIT_REQUIRE_BINARY();
  GRASSAUDIT_REQUIRE_SNLI(data);
  for (const std::string head : {"transformer", "grassmann"}) {
    nli_testing::TempDir t;
    const std::string one = t.file("one"), two = t.file("two");
    auto r1 = nli_testing::run_grassaudit(args(head, data, one), 120);
    ASSERT_EQ(r1.status, 0) << r1.err;
    const std::string port = std::to_string(free_port());
    std::vector<pid_t> pids;
    for (int r = 0; r < 2; ++r) {
      const std::string io = t.file("io" + std::to_string(r));
      std::filesystem::create_directories(io);
      pids.push_back(testing::spawn_grassaudit_env(
          args(head, data, two), io,
          {{"RANK", std::to_string(r)}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", std::to_string(r)},
           {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", port}}));
    }
    for (int r = 0; r < 2; ++r)
      ASSERT_EQ(nli_testing::wait_for(pids[r], 120), 0)
          << head << " rank " << r << ": " << nli_testing::read_text(t.file("io" + std::to_string(r)) + "/stderr.txt");
    const auto a = nli_testing::read_jsonl(one + "/metrics-seed5.jsonl");
    const auto b = nli_testing::read_jsonl(two + "/metrics-seed5.jsonl");
    ASSERT_EQ(a.size(), b.size()) << head;
    double worst = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      ASSERT_EQ(a[i]["type"], b[i]["type"]);
      ASSERT_EQ(a[i]["step"], b[i]["step"]);
      const double x = a[i]["loss"].get<double>(), y = b[i]["loss"].get<double>();
      worst = std::max(worst, std::abs(x - y) / std::abs(x));
      EXPECT_LE(std::abs(x - y), 1e-4 * std::abs(x)) << head << " record " << i << ": " << y << " vs " << x;
      // The two runs' weights agree to the losses' 1e-4, not bit for bit (the ranks sum their
      // gradients in another order), so an example whose two top classes are nearly tied may
      // flip: at most one example of the split, on any CPU.
      if (a[i]["type"] == "eval") {
        const double n = std::max(1.0, a[i].at("examples").get<double>());
        EXPECT_LE(std::abs(a[i]["accuracy"].get<double>() - b[i]["accuracy"].get<double>()), 1.0 / n + 1e-12)
            << head << " record " << i;
      }
    }
    std::cerr << head << ": worst relative loss difference " << worst << "\n";
    EXPECT_EQ(json::parse(nli_testing::read_text(two + "/summary.json"))["world_size"], 2);
  }
}

}  // namespace
}  // namespace grassaudit
