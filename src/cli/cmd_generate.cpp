// grassaudit generate: text from a checkpoint through its incremental path (KV cache, Grassmann
// buffer), after the audit gate: a checkpoint whose audit is leaky is refused (its numbers are
// quarantined, so are its samples), exit 1 with one line.
#include <fmt/format.h>

#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/checkpoint_train_config.h"
#include "cli/cli_common.h"
#include "cli/commands.h"
#include "core/checkpoint.h"
#include "core/generate.h"
#include "runtime/runtime.h"
#include "text/data_dir.h"
#include "text/detokenize.h"
#include "text/word_tokenizer.h"
#include "text/wikitext2.h"
#include "text/wordpiece.h"
#include "train/gate.h"
#include "train/lm_data.h"
#include "train/train_config.h"
#include "util/atomic_file.h"
#include "util/error.h"

namespace grassaudit::cli {

namespace {

// The vocabulary the checkpoint was trained with and the prompt's ids under it.
struct Encoded {
  Vocab vocab;
  std::vector<int64_t> ids;
};

Encoded encode_prompt(const std::string& prompt, const std::string& tokenizer, const std::string& data_dir,
                      bool allow_other_data) {
  Encoded e;
  if (tokenizer == "wordpiece") {
    e.vocab = Vocab::load_bert(require_data_file(data_dir, "bert-base-uncased/vocab.txt"));
    for (int32_t id : WordPieceTokenizer(e.vocab).encode(prompt)) e.ids.push_back(id);
  } else {
    // Word-level ids are assigned in first-seen order over the corpus: the vocabulary is the corpus'.
    e.vocab = load_wikitext2(data_dir, "word", allow_other_data, default_cache_dir()).vocab;
    const int32_t unk = e.vocab.find("<unk>");
    std::vector<std::string_view> words;
    split_words(prompt, words);
    for (auto w : words) {
      const int32_t id = e.vocab.find(w);
      if (id == Vocab::kNoId && unk == Vocab::kNoId)
        throw InputError(fmt::format("prompt word '{}' is not in the vocabulary (which has no <unk>)", w));
      e.ids.push_back(id == Vocab::kNoId ? unk : id);
    }
  }
  if (e.ids.empty()) throw InputError("--prompt has no tokens");
  return e;
}

}  // namespace

int generate_main(int argc, char** argv) {
  return guarded("generate", [&]() -> int {
    po::options_description desc("generate options");
    int threads = 0;
    std::string checkpoint, prompt, json_path, data_dir;
    int64_t tokens = 50;
    SamplingOptions sopt;
    desc.add_options()
        ("checkpoint", po::value<std::string>(&checkpoint)->required(), "checkpoint file (last.ckpt, best.ckpt)")
        ("prompt", po::value<std::string>(&prompt)->required(), "text to continue (tokenized as the model was trained)")
        ("tokens", po::value<int64_t>(&tokens)->default_value(50), "new tokens to generate")
        ("temperature", po::value<double>(&sopt.temperature)->default_value(1.0), "sampling temperature (0: greedy)")
        ("top-k", po::value<int64_t>(&sopt.top_k)->default_value(0), "sample from the K most likely tokens (0: all)")
        ("seed", po::value<Unsigned64>()->default_value(Unsigned64{1234}, "1234"), "sampling seed")
        ("json", po::value<std::string>(&json_path), "also write prompt, ids, text, settings and the audit as JSON")
        ("data-dir", po::value<std::string>(&data_dir), "folder holding wikitext-2/ and bert-base-uncased/")
        ("allow-other-data", "accept data files that differ from the published WikiText-2 (word tokenizer)");
    add_threads_option(desc, &threads);
    po::variables_map vm;
    if (!parse(argc, argv, desc, vm,
               "usage: grassaudit generate --checkpoint FILE --prompt TEXT [--tokens N] [--temperature T] [--top-k K]\n"
               "                           [--seed S] [--json FILE] [--data-dir DIR] [--threads T]\n"
               "The checkpoint is audited first (the gate of train/eval): a leaky one is refused (exit 1).\n"
               "Beyond the model's max_len the context restarts from its last max_len/2 tokens."))
      return kExitOk;
    sopt.seed = vm["seed"].as<Unsigned64>().value;
    validate_sampling(sopt);
    if (tokens < 1) throw InputError(fmt::format("--tokens must be >= 1, got {}", tokens));
    if (vm.count("json")) check_output_path(json_path, "--json");

    LoadedCheckpoint ck = load_checkpoint(checkpoint);
    configure_threads(threads);
    const TrainConfig tcfg = checkpoint_train_config(ck, checkpoint);
    const Encoded enc = encode_prompt(prompt, tcfg.tokenizer, data_dir, vm.count("allow-other-data") > 0);
    if (enc.vocab.size() != ck.config.vocab_size)
      throw InputError(fmt::format("{}: vocab_size {} does not match the {} tokenizer's vocabulary ({})", checkpoint,
                                   ck.config.vocab_size, tcfg.tokenizer, enc.vocab.size()));
    print_runtime_banner();
    const int64_t L = tcfg.block_len(ck.config);
    std::cerr << fmt::format("{}: mixer {}, auditing the weights first (L {})...\n", checkpoint, ck.config.mixer, L);
    AuditGate gate(gate_audit_options(L, tcfg.audit_trials, tcfg.audit_batch, tcfg.seed));
    const AuditResult& audit = gate.audit(ck.model);
    if (audit.leaky()) {
      std::cerr << fmt::format("grassaudit generate: {}: the audit found it leaky ({}): its numbers are quarantined, "
                               "and so are its samples\n",
                               checkpoint, audit.violations.empty() ? "leak" : audit.violations.front().evidence.text);
      return kExitFinding;
    }
    if (const auto why = ck.model->incremental_unsupported(); !why.empty())
      throw InputError(fmt::format("{}: {}", checkpoint, why));
    const auto t0 = std::chrono::steady_clock::now();
    const auto ids = generate_tokens(ck.model, enc.ids, tokens, sopt);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const std::string continuation = detokenize(enc.vocab, ids, tcfg.tokenizer);
    const std::string prompt_text = detokenize(enc.vocab, enc.ids, tcfg.tokenizer);
    std::cout << prompt_text << " " << continuation << "\n";
    std::cerr << fmt::format("{} tokens in {:.2f} s ({:.1f} tokens/s), seed {}, temperature {:g}, top-k {}\n", ids.size(),
                             secs, static_cast<double>(ids.size()) / std::max(secs, 1e-9), sopt.seed, sopt.temperature,
                             sopt.top_k);
    if (!json_path.empty()) {
      nlohmann::json j{{"checkpoint", checkpoint},
                       {"mixer", ck.config.mixer},
                       {"tokenizer", tcfg.tokenizer},
                       {"prompt", prompt},
                       {"prompt_ids", enc.ids},
                       {"ids", ids},
                       {"text", continuation},
                       {"seed", sopt.seed},
                       {"temperature", sopt.temperature},
                       {"top_k", sopt.top_k},
                       {"tokens", tokens},
                       {"seconds", secs},
                       {"audit", audit_brief(audit)},
                       {"weights_sha256", audit.weights_sha256}};
      write_file_atomic(json_path, j.dump(2) + "\n");
    }
    return kExitOk;
  });
}

}  // namespace grassaudit::cli
