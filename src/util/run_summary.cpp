#include "util/run_summary.h"

#include <cmath>

#include "util/error.h"
#include "util/json_fields.h"
#include "util/quarantine.h"
#include "util/run_provenance.h"

namespace grassaudit {
namespace {

using nlohmann::json;

template <class T>
void put(json& j, const char* key, const std::optional<T>& value) {
  if (value) j[key] = *value;
}

// Counts the trainers write as integers but the report reads as any number: written as an
// integer whenever the value is whole, so the trainers' files stay as they were.
void put_count(json& j, const char* key, const std::optional<double>& value) {
  if (!value) return;
  if (*value == std::floor(*value) && std::fabs(*value) < 9e15) {
    j[key] = static_cast<long long>(*value);
  } else {
    j[key] = *value;
  }
}

bool present(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && !it->is_null();
}

void put_lm(json& j, const LmSummary& s) {
  j["mixer"] = public_mixer_name(s.mixer);
  if (s.family) j["family"] = family_name(*s.family);
  if (s.pairing) j["pairing"] = pairing_name(*s.pairing);
  put(j, "tokenizer", s.tokenizer);
  put(j, "dataset", s.dataset);
  put(j, "seq_len", s.seq_len);
  put(j, "layers", s.layers);
  put(j, "d_model", s.d_model);
  put(j, "norm", s.norm);
  put(j, "rank", s.rank);
  put(j, "offsets", s.offsets);
  put(j, "offset_mode", s.offset_mode);
  put(j, "heads", s.heads);
  put(j, "mixer_impl", s.mixer_impl);
  put(j, "d_ff", s.d_ff);
  put(j, "vocab_size", s.vocab_size);
  put(j, "preset", s.preset);
  put(j, "epochs", s.epochs);
  put(j, "epochs_planned", s.epochs_planned);
  put(j, "stopped_by", s.stopped_by);
  put(j, "patience", s.patience);
  put(j, "time_budget_seconds", s.time_budget_seconds);
  put(j, "steps", s.steps);
  put_count(j, "tokens_seen", s.tokens_seen);
  put(j, "device", s.device);
  put(j, "seed", s.seed);
  put(j, "allreduce_seconds", s.allreduce_seconds);
  put(j, "tokens_per_second", s.tokens_per_second);
  put(j, "best_epoch", s.best_epoch);
  put(j, "best_step", s.best_step);
  put(j, "valid_tokens", s.valid_tokens);
  put(j, "test_tokens", s.test_tokens);
  put(j, "best_valid_ppl", s.best_valid_ppl);
  put(j, "test_ppl", s.test_ppl);
  put(j, "quarantined_best_valid_ppl", s.quarantined_best_valid_ppl);
  put(j, "quarantined_test_ppl", s.quarantined_test_ppl);
}

void put_snli(json& j, const SnliSummary& s) {
  j["head"] = s.head;
  put(j, "features", s.features);
  put(j, "protocol", s.protocol);
  j["seeds"] = s.seeds;
  j["val_acc"] = s.val_acc;
  j["test_acc"] = s.test_acc;
  put(j, "val_acc_mean", s.val_acc_mean);
  put(j, "val_acc_std", s.val_acc_std);
  put(j, "test_acc_mean", s.test_acc_mean);
  put(j, "test_acc_std", s.test_acc_std);
  put(j, "best_epochs", s.best_epochs);
  put(j, "head_params", s.head_params);
  put(j, "encoder_params", s.encoder_params);
  put(j, "embedding_rows", s.embedding_rows);
  put_count(j, "epochs", s.epochs);
  put(j, "batch", s.batch);
  put(j, "lr", s.lr);
  put(j, "d_model", s.d_model);
  put(j, "head_layers", s.head_layers);
  put(j, "encoder_layers", s.encoder_layers);
  put(j, "heads", s.heads);
  put(j, "d_ff", s.d_ff);
  put(j, "dropout", s.dropout);
  put(j, "max_sentence_tokens", s.max_sentence_tokens);
  put(j, "train_pairs", s.train_pairs);
  put(j, "val_pairs", s.val_pairs);
  put(j, "test_pairs", s.test_pairs);
  put(j, "wall_seconds_per_seed", s.wall_seconds_per_seed);
  put(j, "d_proj", s.d_proj);
  put(j, "window", s.window);
  put(j, "stride", s.stride);
  put(j, "pairing", s.pairing);
  put(j, "test_acc_pluecker_zeroed", s.test_acc_pluecker_zeroed);
  put(j, "test_acc_pluecker_zeroed_mean", s.test_acc_pluecker_zeroed_mean);
  put(j, "test_acc_pluecker_zeroed_std", s.test_acc_pluecker_zeroed_std);
}

// "mixer" names both family and pairing; the optional "family" and "pairing" keys restate
// them, so one that disagrees is a malformed artifact rather than a second opinion.
void read_mixer(LmSummary& s, const json& j, const std::string& where) {
  const std::string mixer = req_string(j, "mixer", where);
  s.mixer = parse_run_mixer(mixer, where);
  if (const auto family = opt_string(j, "family", where)) {
    s.family = parse_family(*family, where);
    if (*s.family != s.mixer.family) {
      throw InputError(where + ": malformed artifact: 'family' \"" + *family + "\" contradicts 'mixer' \"" +
                       mixer + "\"");
    }
  }
  if (const auto pairing = opt_string(j, "pairing", where)) {
    s.pairing = parse_pairing(*pairing, where);
    if (*s.pairing != s.mixer.pairing) {
      throw InputError(where + ": malformed artifact: 'pairing' \"" + *pairing + "\" contradicts 'mixer' \"" +
                       mixer + "\"");
    }
  }
}

LmSummary read_lm(const json& j, const std::string& where) {
  LmSummary s;
  read_mixer(s, j, where);
  s.tokenizer = opt_string(j, "tokenizer", where);
  s.dataset = opt_string(j, "dataset", where);
  s.seq_len = opt_integer(j, "seq_len", where);
  s.layers = opt_integer(j, "layers", where);
  s.d_model = opt_integer(j, "d_model", where);
  s.rank = opt_integer(j, "rank", where);
  s.heads = opt_integer(j, "heads", where);
  if (const auto seed = opt_integer(j, "seed", where)) s.seed = static_cast<uint64_t>(*seed);
  if (present(j, "offsets")) s.offsets = opt_integer_array(j, "offsets", where);
  s.offset_mode = opt_string(j, "offset_mode", where);
  s.norm = opt_string(j, "norm", where);
  const std::string norm = s.norm.value_or("post");
  if (norm != "post" && norm != "pre")
    throw InputError(where + ": \"norm\" must be \"post\" or \"pre\", got \"" + norm + "\"");
  s.epochs = opt_number(j, "epochs", where);
  s.stopped_by = opt_string(j, "stopped_by", where);
  s.best_epoch = opt_number(j, "best_epoch", where);
  s.epochs_planned = opt_integer(j, "epochs_planned", where);
  s.patience = opt_integer(j, "patience", where);
  s.tokens_seen = opt_number(j, "tokens_seen", where);
  s.tokens_per_second = opt_number(j, "tokens_per_second", where);
  s.best_valid_ppl = opt_number(j, "best_valid_ppl", where);
  s.test_ppl = opt_number(j, "test_ppl", where);
  s.quarantined_best_valid_ppl = opt_number(j, "quarantined_best_valid_ppl", where);
  s.quarantined_test_ppl = opt_number(j, "quarantined_test_ppl", where);
  return s;
}

SnliSummary read_snli(const json& j, const std::string& where) {
  SnliSummary s;
  s.head = req_string(j, "head", where);
  s.features = opt_string(j, "features", where);
  for (long long seed : opt_integer_array(j, "seeds", where)) s.seeds.push_back(static_cast<uint64_t>(seed));
  s.val_acc = opt_number_array(j, "val_acc", where);
  s.test_acc = opt_number_array(j, "test_acc", where);
  s.epochs = opt_number(j, "epochs", where);
  s.train_pairs = opt_integer(j, "train_pairs", where);
  if (s.val_acc.empty()) throw InputError(where + ": missing 'val_acc'");
  if (!s.seeds.empty() && s.seeds.size() != s.val_acc.size()) {
    throw InputError(where + ": 'seeds' and 'val_acc' differ in length");
  }
  if (!s.test_acc.empty() && s.test_acc.size() != s.val_acc.size()) {
    throw InputError(where + ": 'test_acc' and 'val_acc' differ in length");
  }
  return s;
}

}  // namespace

json to_json(const SummaryAudit& audit) {
  json a{{"verdict", audit.verdict}, {"weights_sha256", audit.weights_sha256}};
  put(a, "leak_horizon", audit.leak_horizon);
  put(a, "max_effect", audit.max_effect);
  return a;
}

json to_json(const RunSummary& s) {
  json j = json::object();
  put(j, "run", s.run);
  j["task"] = s.task;
  if (s.audit) j["audit"] = to_json(*s.audit);
  put_count(j, "params", s.params);
  put(j, "threads", s.threads);
  put(j, "blas", s.blas);
  put(j, "wall_seconds", s.wall_seconds);
  put(j, "train_seconds", s.train_seconds);
  put(j, "world_size", s.world_size);
  if (!s.provenance.is_null()) j["provenance"] = s.provenance;
  if (s.task == "snli") {
    put_snli(j, s.snli);
  } else {
    put_lm(j, s.lm);
  }
  return j;
}

// The checks run in the order the report has always made them, so a summary with several
// faults names the same one first.
RunSummary read_run_summary(const json& j, const std::string& where) {
  require_object(j, where);
  RunSummary s;
  if (auto a = j.find("audit"); a != j.end() && !a->is_null()) {
    require_object(*a, where + " (audit)");
    SummaryAudit audit;
    audit.verdict = check_verdict(opt_string(*a, "verdict", where), where);
    audit.leak_horizon = opt_integer(*a, "leak_horizon", where);
    audit.max_effect = opt_number(*a, "max_effect", where);
    audit.weights_sha256 = opt_string(*a, "weights_sha256", where).value_or("");
    s.audit = audit;
  }
  check_ppl_keys(j, s.audit ? s.audit->verdict : std::string(), where);

  s.task = opt_string(j, "task", where).value_or("lm");
  if (s.task != "lm" && s.task != "snli") {
    throw InputError(where + ": 'task' must be \"lm\" or \"snli\", got \"" + s.task + "\"");
  }
  s.params = opt_number(j, "params", where);
  s.threads = opt_integer(j, "threads", where);
  if (present(j, "provenance")) s.provenance = j.at("provenance");
  read_run_provenance(s.provenance, where);
  s.blas = opt_string(j, "blas", where);
  s.wall_seconds = opt_number(j, "wall_seconds", where);
  if (s.task == "snli") {
    s.snli = read_snli(j, where);
  } else {
    s.lm = read_lm(j, where);
  }
  return s;
}

}  // namespace grassaudit
