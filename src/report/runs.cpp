#include "report/runs.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "report/json_io.h"
#include "util/error.h"

namespace grassaudit {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}
bool is_ppl_key(const std::string& key) {
  return ends_with(key, "ppl") || key.find("perplexity") != std::string::npos;
}

// Enforces the quarantine naming rule on every key of `value`, recursively.
//   leaky:  a perplexity key without the "quarantined_" prefix is malformed;
//   causal: a "quarantined_" perplexity key is malformed (contradicts the verdict).
void check_ppl_keys(const json& value, const std::string& verdict, const std::string& where) {
  if (value.is_array()) {
    for (const auto& e : value) check_ppl_keys(e, verdict, where);
    return;
  }
  if (!value.is_object()) return;
  for (auto it = value.begin(); it != value.end(); ++it) {
    const std::string& key = it.key();
    if (is_ppl_key(key)) {
      const bool quarantined = starts_with(key, "quarantined_");
      if (verdict == "leaky" && !quarantined) {
        throw InputError(where + ": malformed artifact: audit verdict is leaky but '" + key +
                         "' is a plain perplexity key (leaky runs must use 'quarantined_" + key +
                         "')");
      }
      if (verdict == "causal" && quarantined) {
        throw InputError(where + ": malformed artifact: audit verdict is causal but '" + key +
                         "' is quarantined");
      }
    }
    check_ppl_keys(it.value(), verdict, where);
  }
}

std::string check_verdict(const std::optional<std::string>& v, const std::string& where) {
  if (!v) throw InputError(where + ": audit block has no 'verdict'");
  if (*v != "causal" && *v != "leaky") {
    throw InputError(where + ": audit verdict must be \"causal\" or \"leaky\", got \"" + *v + "\"");
  }
  return *v;
}

// "mixer" names both family and pairing; the optional "family" and "pairing" keys restate
// them, so one that disagrees is a malformed artifact rather than a second opinion.
void read_mixer(RunRecord& run, const json& j, const std::string& path) {
  const std::string mixer = req_string(j, "mixer", path);
  const MixerKind kind = parse_run_mixer(mixer, path);
  if (const auto family = opt_string(j, "family", path)) {
    if (parse_family(*family, path) != kind.family) {
      throw InputError(path + ": malformed artifact: 'family' \"" + *family +
                       "\" contradicts 'mixer' \"" + mixer + "\"");
    }
  }
  if (const auto pairing = opt_string(j, "pairing", path)) {
    if (parse_pairing(*pairing, path) != kind.pairing) {
      throw InputError(path + ": malformed artifact: 'pairing' \"" + *pairing +
                       "\" contradicts 'mixer' \"" + mixer + "\"");
    }
  }
  run.family = kind.family;
  run.pairing = kind.pairing;
}

void read_summary(RunRecord& run, const std::string& path) {
  const json j = parse_json_file(path);
  require_object(j, path);

  if (auto a = j.find("audit"); a != j.end() && !a->is_null()) {
    require_object(*a, path + " (audit)");
    run.audit.verdict = check_verdict(opt_string(*a, "verdict", path), path);
    run.audit.leak_horizon = opt_integer(*a, "leak_horizon", path);
    run.audit.max_effect = opt_number(*a, "max_effect", path);
    run.audit.weights_sha256 = opt_string(*a, "weights_sha256", path).value_or("");
  }
  check_ppl_keys(j, run.audit.verdict, path);

  run.task = opt_string(j, "task", path).value_or("lm");
  if (run.task != "lm" && run.task != "snli") {
    throw InputError(path + ": 'task' must be \"lm\" or \"snli\", got \"" + run.task + "\"");
  }
  run.params = opt_number(j, "params", path);
  run.threads = opt_integer(j, "threads", path);
  run.provenance = read_provenance(j, path);
  run.blas = opt_string(j, "blas", path).value_or("");
  run.wall_seconds = opt_number(j, "wall_seconds", path);

  if (run.task == "snli") {
    run.head = req_string(j, "head", path);
    run.dataset = opt_string(j, "features", path).value_or("");
    run.seeds = opt_integer_array(j, "seeds", path);
    run.val_acc = opt_number_array(j, "val_acc", path);
    run.test_acc = opt_number_array(j, "test_acc", path);
    run.epochs = opt_number(j, "epochs", path);
    run.train_pairs = opt_integer(j, "train_pairs", path);
    if (run.val_acc.empty()) throw InputError(path + ": missing 'val_acc'");
    if (!run.seeds.empty() && run.seeds.size() != run.val_acc.size()) {
      throw InputError(path + ": 'seeds' and 'val_acc' differ in length");
    }
    if (!run.test_acc.empty() && run.test_acc.size() != run.val_acc.size()) {
      throw InputError(path + ": 'test_acc' and 'val_acc' differ in length");
    }
    return;
  }

  read_mixer(run, j, path);
  run.tokenizer = opt_string(j, "tokenizer", path).value_or("");
  run.dataset = opt_string(j, "dataset", path).value_or("");
  run.seq_len = opt_integer(j, "seq_len", path);
  run.layers = opt_integer(j, "layers", path);
  run.d_model = opt_integer(j, "d_model", path);
  run.rank = opt_integer(j, "rank", path);
  run.heads = opt_integer(j, "heads", path);
  run.seed = opt_integer(j, "seed", path);
  run.offsets = opt_integer_array(j, "offsets", path);
  run.offset_mode = opt_string(j, "offset_mode", path).value_or("");
  run.norm = opt_string(j, "norm", path).value_or("post");
  if (run.norm != "post" && run.norm != "pre")
    throw InputError(path + ": \"norm\" must be \"post\" or \"pre\", got \"" + run.norm + "\"");
  run.epochs = opt_number(j, "epochs", path);
  run.stopped_by = opt_string(j, "stopped_by", path).value_or("");
  run.best_epoch = opt_number(j, "best_epoch", path);
  run.epochs_planned = opt_integer(j, "epochs_planned", path);
  run.patience = opt_integer(j, "patience", path).value_or(0);
  run.tokens_seen = opt_number(j, "tokens_seen", path);
  run.tokens_per_second = opt_number(j, "tokens_per_second", path);
  run.best_valid_ppl = opt_number(j, "best_valid_ppl", path);
  run.test_ppl = opt_number(j, "test_ppl", path);
  run.quarantined_best_valid_ppl = opt_number(j, "quarantined_best_valid_ppl", path);
  run.quarantined_test_ppl = opt_number(j, "quarantined_test_ppl", path);
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
