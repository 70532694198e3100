#include "report/runs.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "report/json_io.h"
#include "util/error.h"
#include "util/quarantine.h"
#include "util/run_provenance.h"

namespace grassaudit {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The report's record of a summary.json: the fields of its task, flattened.
void read_summary(RunRecord& run, const std::string& path) {
  const RunSummary s = read_run_summary(parse_json_file(path), path);
  run.audit = s.audit.value_or(RunAudit{});
  run.task = s.task;
  run.params = s.params;
  run.threads = s.threads;
  run.provenance = read_run_provenance(s.provenance, path);
  run.blas = s.blas.value_or("");
  run.wall_seconds = s.wall_seconds;

  if (run.task == "snli") {
    const SnliSummary& n = s.snli;
    run.head = n.head;
    run.dataset = n.features.value_or("");
    for (uint64_t seed : n.seeds) run.seeds.push_back(static_cast<long long>(seed));
    run.val_acc = n.val_acc;
    run.test_acc = n.test_acc;
    run.epochs = n.epochs;
    run.train_pairs = n.train_pairs;
    return;
  }

  const LmSummary& m = s.lm;
  run.family = m.mixer.family;
  run.pairing = m.mixer.pairing;
  run.tokenizer = m.tokenizer.value_or("");
  run.dataset = m.dataset.value_or("");
  run.seq_len = m.seq_len;
  run.layers = m.layers;
  run.d_model = m.d_model;
  run.rank = m.rank;
  run.heads = m.heads;
  if (m.seed) run.seed = static_cast<long long>(*m.seed);
  run.offsets = m.offsets.value_or(std::vector<long long>{});
  run.offset_mode = m.offset_mode.value_or("");
  run.norm = m.norm.value_or("post");
  run.epochs = m.epochs;
  run.stopped_by = m.stopped_by.value_or("");
  run.best_epoch = m.best_epoch;
  run.epochs_planned = m.epochs_planned;
  run.patience = m.patience.value_or(0);
  run.tokens_seen = m.tokens_seen;
  run.tokens_per_second = m.tokens_per_second;
  run.best_valid_ppl = m.best_valid_ppl;
  run.test_ppl = m.test_ppl;
  run.quarantined_best_valid_ppl = m.quarantined_best_valid_ppl;
  run.quarantined_test_ppl = m.quarantined_test_ppl;
}

void read_metrics(RunRecord& run, const std::string& path) {
  const auto lines = parse_jsonl_file(path);
  size_t n = 0;
  for (const auto& line : lines) {
    ++n;
    const std::string where = path + " (record " + std::to_string(n) + ")";
    require_object(line, where);
    const auto line_verdict = opt_string(line, "audit_verdict", where);
    // The run's verdict binds every line; a line's own "leaky" verdict binds that line.
    check_ppl_keys(line, run.audit.verdict, where);
    if (line_verdict && *line_verdict == "leaky") check_ppl_keys(line, "leaky", where);
    const std::string type = opt_string(line, "type", where).value_or("");
    if (type == "train") {
      // Only a language model's loss is a per-token cross-entropy comparable across runs.
      if (run.task != "lm") continue;
      const auto epoch = opt_number(line, "epoch", where);
      const auto loss = opt_number(line, "loss", where);
      if (!epoch || !loss) continue;
      run.train.push_back({*epoch, opt_integer(line, "step", where), *loss});
      continue;
    }
    if (type != "eval") continue;
    if (opt_string(line, "split", where).value_or("valid") != "valid") continue;
    const auto ppl = opt_number(line, "ppl", where);
    const auto qppl = opt_number(line, "quarantined_ppl", where);
    if (ppl && qppl) {
      throw InputError(where + ": malformed artifact: both 'ppl' and 'quarantined_ppl'");
    }
    if (!ppl && !qppl) continue;
    EvalPoint p;
    p.epoch = opt_number(line, "epoch", where).value_or(static_cast<double>(run.evals.size() + 1));
    p.ppl = ppl ? *ppl : *qppl;
    p.quarantined = static_cast<bool>(qppl);
    run.evals.push_back(p);
  }
  std::stable_sort(run.evals.begin(), run.evals.end(),
                   [](const EvalPoint& a, const EvalPoint& b) { return a.epoch < b.epoch; });
  std::stable_sort(run.train.begin(), run.train.end(),
                   [](const TrainPoint& a, const TrainPoint& b) { return a.epoch < b.epoch; });
}

void read_audit(RunRecord& run, const std::string& path) {
  const json j = parse_json_file(path);
  require_object(j, path);
  run.audit_file = read_audit_file_info(j, path);
  const std::string verdict = check_verdict(opt_string(j, "verdict", path), path);
  if (!run.audit.verdict.empty() && verdict != run.audit.verdict) {
    throw InputError(path + ": malformed artifact: verdict \"" + verdict +
                     "\" contradicts summary.json (\"" + run.audit.verdict + "\")");
  }
  auto lm = j.find("leak_map");
  if (lm == j.end() || lm->is_null()) return;
  const std::string where = path + " (leak_map)";
  require_object(*lm, where);
  LeakMap map;
  map.seq_len = opt_integer(*lm, "seq_len", where).value_or(0);
  auto cells = lm->find("cells");
  if (cells != lm->end() && !cells->is_null()) {
    if (!cells->is_array()) throw InputError(where + ": 'cells' must be an array");
    for (const auto& c : *cells) {
      if (!c.is_array() || c.size() != 3 || !c[0].is_number_integer() ||
          !c[1].is_number_integer() || !c[2].is_number()) {
        throw InputError(where + ": each cell must be [t, D, effect] (integers, integer, number)");
      }
      LeakCell cell{c[0].get<long long>(), c[1].get<long long>(), c[2].get<double>()};
      if (cell.t < 0 || cell.d < 1) {
        throw InputError(where + ": cell with t < 0 or D < 1");
      }
      map.cells.push_back(cell);
    }
  }
  if (map.seq_len <= 0) {
    for (const auto& c : map.cells) map.seq_len = std::max(map.seq_len, c.t + 1);
  }
  run.leak_map = std::move(map);
}

// The settings a run was made with, minus its seed. config.json is the full record when the
// trainer wrote one; older or hand-made folders have only summary.json.
std::string summary_config_key(const RunRecord& run) {
  json k{{"task", run.task}};
  if (run.family) k["family"] = family_name(*run.family);
  if (run.pairing) k["pairing"] = pairing_name(*run.pairing);
  k["tokenizer"] = run.tokenizer;
  k["dataset"] = run.dataset;
  k["seq_len"] = run.seq_len ? json(*run.seq_len) : json();
  k["layers"] = run.layers ? json(*run.layers) : json();
  k["d_model"] = run.d_model ? json(*run.d_model) : json();
  k["rank"] = run.rank ? json(*run.rank) : json();
  k["heads"] = run.heads ? json(*run.heads) : json();
  k["offsets"] = run.offsets;
  k["offset_mode"] = run.offset_mode;
  k["norm"] = run.norm;
  k["epochs"] = run.epochs ? json(*run.epochs) : json();
  k["params"] = run.params ? json(*run.params) : json();
  k["head"] = run.head;
  return "summary:" + k.dump();
}

void read_config(RunRecord& run, const std::string& path) {
  json j = parse_json_file(path);
  require_object(j, path);
  if (auto d = j.find("data"); d != j.end() && d->is_object()) {
    run.train_data = opt_string(*d, "train", path + " (data)").value_or("");
  }
  // The seed is what may differ between runs of one setting.
  j.erase("seed");
  j.erase("seeds");
  if (auto tr = j.find("train"); tr != j.end() && tr->is_object()) tr->erase("seed");
  run.config_key = "config:" + j.dump();
}

}  // namespace

Standing standing_of(const RunRecord& run) {
  if (run.audit.verdict == "causal") return Standing::kValid;
  if (run.audit.verdict == "leaky") return Standing::kQuarantined;
  return Standing::kUnaudited;
}

std::optional<long long> expected_horizon(const RunRecord& run) {
  if (run.pairing != MixerPairing::kFuture || run.offsets.empty()) return std::nullopt;
  if (run.offset_mode == "all") {
    if (!run.layers) return std::nullopt;
    return *run.layers * *std::max_element(run.offsets.begin(), run.offsets.end());
  }
  if (run.offset_mode == "per-layer") {
    long long sum = 0;
    for (long long d : run.offsets) sum += d;
    return sum;
  }
  return std::nullopt;
}

// A sample whose weights are not the audited ones would show text the gate never saw: refused.
void read_sample(RunRecord& run, const std::string& path) {
  const json j = parse_json_file(path);
  require_object(j, path);
  RunSample s;
  s.prompt = req_string(j, "prompt", path);
  s.text = req_string(j, "text", path);
  s.seed = opt_integer(j, "seed", path);
  s.top_k = opt_integer(j, "top_k", path);
  s.temperature = opt_number(j, "temperature", path);
  s.weights_sha256 = opt_string(j, "weights_sha256", path).value_or("");
  if (!s.weights_sha256.empty() && !run.audit.weights_sha256.empty() && s.weights_sha256 != run.audit.weights_sha256)
    throw InputError(path + ": malformed artifact: weights_sha256 differs from the audited weights in summary.json");
  run.sample = std::move(s);
}

RunRecord load_run(const std::string& dir) {
  RunRecord run;
  run.dir = dir;
  run.name = fs::path(dir).filename().string();
  if (run.name.empty()) run.name = fs::path(dir).parent_path().filename().string();
  read_summary(run, (fs::path(dir) / "summary.json").string());
  std::error_code ec;
  const auto metrics = fs::path(dir) / "metrics.jsonl";
  if (fs::is_regular_file(metrics, ec)) read_metrics(run, metrics.string());
  const auto audit = fs::path(dir) / "audit.json";
  if (fs::is_regular_file(audit, ec)) read_audit(run, audit.string());
  const auto sample = fs::path(dir) / "sample.json";
  if (fs::is_regular_file(sample, ec)) read_sample(run, sample.string());
  const auto config = fs::path(dir) / "config.json";
  if (fs::is_regular_file(config, ec)) {
    read_config(run, config.string());
  } else {
    run.config_key = summary_config_key(run);
  }
  if (run.provenance) {
    json data = json::object();
    for (const auto& [p, h] : run.provenance->data_sha256) data[p] = h;
    run.config_key += " data:" + data.dump();
  }
  return run;
}

std::vector<RunRecord> load_runs(const std::string& runs_dir) {
  std::vector<std::string> dirs;
  std::error_code ec;
  if (!fs::exists(runs_dir, ec)) return {};
  if (!fs::is_directory(runs_dir, ec)) throw InputError(runs_dir + ": not a directory");
  fs::directory_iterator it(runs_dir, ec);
  if (ec) throw InputError(runs_dir + ": cannot list: " + ec.message());
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    std::error_code probe;
    if (!it->is_directory(probe)) continue;
    if (!fs::is_regular_file(it->path() / "summary.json", probe)) continue;
    dirs.push_back(it->path().string());
  }
  if (ec) throw InputError(runs_dir + ": cannot list: " + ec.message());
  std::sort(dirs.begin(), dirs.end());
  std::vector<RunRecord> runs;
  for (const auto& d : dirs) runs.push_back(load_run(d));
  return runs;
}

}  // namespace grassaudit
