#pragma once
// Tiny training runs on the fake corpus (cli_support.h's make_fake_data), shared by the
// interruption, crash-consistency and early-stopping tests: the resolved tiny config, a fixture
// holding the data and config files, the commands of a fresh and a resumed run, and comparisons
// of what two runs wrote.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_checkpoints.h"
#include "cli_support.h"

namespace grassaudit::clitest {

// The tiny preset, resolved, with a checkpoint after every step and two epochs.
inline nlohmann::json tiny_config() {
  return nlohmann::json::parse(R"({
    "model": {"mixer": "past", "d_model": 16, "rank": 4, "layers": 2, "max_len": 16, "heads": 2, "d_ff": 32,
              "dropout": 0.1, "eps": 1e-8, "offsets": [1, 2], "offset_mode": "per-layer"},
    "train": {"tokenizer": "word", "seq_len": 16, "batch": 4, "epochs": 2, "lr": 0.001, "warmup_steps": 5,
              "log_every": 1, "checkpoint_every": 1, "eval_batch": 16, "eval_max_tokens": 512,
              "audit_trials": 1, "audit_batch": 8, "seed": 11}
  })");
}

struct TrainingFixture {
  TempDir t;
  Cli cli{t};
  std::string data = t.file("data");
  std::string config = t.file("config.json");
  explicit TrainingFixture(int train_lines = 400, const nlohmann::json& cfg = tiny_config(), int eval_lines = 60) {
    make_fake_data(data, train_lines, eval_lines);
    write_text(config, cfg.dump(2));
  }
  std::vector<std::string> fresh(const std::string& out) const {
    return {"train", "--config", config, "--data-dir", data, "--allow-other-data", "--out", out, "--threads", "1"};
  }
  std::vector<std::string> resume(const std::string& out) const {
    return {"train", "--resume", out + "/checkpoints/last.ckpt", "--data-dir", data, "--allow-other-data",
            "--threads", "1"};
  }
};

// A validation record taken at an epoch end (a whole epoch number), not one of a run's closing
// phase mid-epoch.
inline bool is_epoch_end_validation(const nlohmann::json& record) {
  if (record.value("split", "") != "valid") return false;
  const double epoch = record["epoch"].get<double>();
  return epoch == static_cast<double>(static_cast<int64_t>(epoch));
}

// The reproducible part of metrics.jsonl: (type, split, step, loss, lr) per record.
inline std::vector<std::string> record_keys(const std::string& out) {
  std::vector<std::string> keys;
  for (const auto& line : lines_of(read_text(out + "/metrics.jsonl"))) {
    nlohmann::json j = nlohmann::json::parse(line);
    std::string k = j.value("type", std::string()) + " " + j.value("split", std::string()) + " step " +
                    std::to_string(j.value("step", int64_t(-1))) + " loss " + j["loss"].dump();
    if (j.contains("lr")) k += " lr " + j["lr"].dump();
    keys.push_back(k);
  }
  return keys;
}

// Equal record lists, or the first difference with its neighbours.
inline ::testing::AssertionResult SameRecords(const std::vector<std::string>& got, const std::vector<std::string>& want) {
  if (got == want) return ::testing::AssertionSuccess();
  size_t i = 0;
  while (i < got.size() && i < want.size() && got[i] == want[i]) ++i;
  auto at = [](const std::vector<std::string>& v, size_t k) { return k < v.size() ? v[k] : std::string("(end)"); };
  auto f = ::testing::AssertionFailure();
  f << "records differ at index " << i << " (" << got.size() << " vs " << want.size() << " records)\n";
  for (size_t k = i > 2 ? i - 2 : 0; k < i + 3; ++k) f << "  got  " << at(got, k) << "\n  want " << at(want, k) << "\n";
  return f;
}

inline ::testing::AssertionResult LastCheckpointLoads(const std::string& out) {
  const std::string ck = out + "/checkpoints/last.ckpt";
  if (!fs::exists(ck)) return ::testing::AssertionSuccess();
  std::string why;
  bool finite = false;
  if (!checkpoint_loads(ck, &why, &finite)) return ::testing::AssertionFailure() << ck << ": " << why;
  if (!finite) return ::testing::AssertionFailure() << ck << ": non-finite weights";
  return ::testing::AssertionSuccess();
}

}  // namespace grassaudit::clitest
