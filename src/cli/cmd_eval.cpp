// grassaudit eval: perplexity of a checkpoint on a WikiText-2 split, through the audit gate.
// A leaky checkpoint still gets its number, quarantined ("quarantined_ppl") and labelled LEAKY;
// the exit status is 0 either way (the number is quarantined, not hidden).
#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/checkpoint_train_config.h"
#include "cli/cli_common.h"
#include "cli/commands.h"
#include "core/checkpoint.h"
#include "core/lm_loss.h"
#include "runtime/runtime.h"
#include "text/wikitext2.h"
#include "train/gate.h"
#include "train/lm_data.h"
#include "train/train_config.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/format_count.h"

namespace grassaudit::cli {

int eval_main(int argc, char** argv) {
  return guarded("eval", [&]() -> int {
    po::options_description desc("eval options");
    int threads = 0;
    std::string checkpoint, split, json_path, data_dir, loss_impl_flag = "fused";
    desc.add_options()
        ("checkpoint", po::value<std::string>(&checkpoint)->required(), "checkpoint file (last.ckpt, best.ckpt)")
        ("split", po::value<std::string>(&split)->required(), "valid | test")
        ("json", po::value<std::string>(&json_path), "also write the result as JSON to this file")
        ("data-dir", po::value<std::string>(&data_dir), "folder holding wikitext-2/ and bert-base-uncased/")
        ("allow-other-data", "accept data files that differ from the published WikiText-2")
        ("loss-impl", po::value<std::string>(&loss_impl_flag),
         "fused (default: chunked head, no [tokens, V] logits) | materialized (the full logits, the reference)");
    add_threads_option(desc, &threads);
    po::variables_map vm;
    if (!parse(argc, argv, desc, vm,
               "usage: grassaudit eval --checkpoint FILE --split valid|test [--json FILE] [--data-dir DIR] [--threads T]\n"
               "                      [--loss-impl fused|materialized]"))
      return kExitOk;
    if (split != "valid" && split != "test") throw InputError(fmt::format("--split must be valid or test, got '{}'", split));
    const LossImpl loss_impl = parse_loss_impl(loss_impl_flag);

    if (vm.count("json")) check_output_path(json_path, "--json");  // before the audit and evaluation
    LoadedCheckpoint ck = load_checkpoint(checkpoint);
    configure_threads(threads);
    const TrainConfig tcfg = checkpoint_train_config(ck, checkpoint);
    const int64_t L = tcfg.block_len(ck.config);
    TokenizedCorpus corpus = load_wikitext2(data_dir, tcfg.tokenizer, vm.count("allow-other-data") > 0,
                                            default_cache_dir());
    if (corpus.vocab_size() != ck.config.vocab_size)
      throw InputError(fmt::format("{}: vocab_size {} does not match the {} tokenizer's vocabulary ({})", checkpoint,
                                   ck.config.vocab_size, tcfg.tokenizer, corpus.vocab_size()));
    const LmBlocks blocks =
        make_lm_blocks(limit_tokens(split == "valid" ? corpus.valid : corpus.test, tcfg.eval_max_tokens), L);
    if (blocks.num_blocks == 0) throw InputError(fmt::format("seq_len {} leaves the {} split with no block", L, split));

    print_runtime_banner();  // after every input is read and checked: errors stay one line
    std::cerr << fmt::format("{}: mixer {}, L {}, {} {} tokens{}; auditing the weights first...\n", checkpoint,
                             ck.config.mixer, L, format_count(blocks.num_blocks * L), split,
                             tcfg.eval_max_tokens > 0 ? " (limited by the run's eval_max_tokens)" : "");
    AuditGate gate(gate_audit_options(L, tcfg.audit_trials, tcfg.audit_batch, tcfg.seed));
    auto g = gated_evaluate(gate, ck.model, blocks, tcfg.eval_batch, c10::Device(c10::kCPU), {}, loss_impl);
    const double ppl = g->stats.ppl();
    std::cout << describe_ppl(split, ppl, g->audit) << "\n";
    if (g->leaky())
      std::cout << "LEAKY: outputs depend on future tokens; the figure is quarantined, not a perplexity.\n";
    if (!json_path.empty()) {
      nlohmann::json j{{"split", split}, {"loss", g->stats.loss}, {"tokens", g->stats.tokens}};
      put_ppl(j, "ppl", ppl, g->leaky());
      j["audit"] = audit_brief(g->audit);
      j["checkpoint"] = checkpoint;
      j["weights_sha256"] = g->audit.weights_sha256;
      j["mixer"] = ck.config.mixer;
      j["tokenizer"] = tcfg.tokenizer;
      j["seq_len"] = L;
      j["loss_impl"] = loss_impl_name(loss_impl);
      write_file_atomic(json_path, j.dump(2) + "\n");
    }
    return kExitOk;
  });
}

}  // namespace grassaudit::cli
