// The pieces of the report on hand-built inputs: cells, the literal-reading conclusion, SNLI.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "report/detail_tables.h"
#include "report/format.h"
#include "report/headline.h"
#include "report/limitations.h"
#include "report/provenance.h"
#include "report/labels.h"
#include "report/literal_finding.h"
#include "report/published.h"
#include "report/ratio_table.h"
#include "report/report.h"
#include "report/snli_table.h"
#include "report/stats.h"
#include "report/wikitext_table.h"
#include "report_test_util.h"
#include "util/error.h"

namespace grassaudit {
namespace {

const Published& pub() {
  static const Published p = load_published((testing::source_dir() / "reference").string());
  return p;
}

RunRecord lm_run(const std::string& name, const std::string& mixer, const std::string& verdict) {
  RunRecord r;
  r.name = name;
  r.task = "lm";
  const MixerKind kind = parse_run_mixer(mixer, "test run");  // as load_run reads "mixer"
  r.family = kind.family;
  r.pairing = kind.pairing;
  r.tokenizer = "wordpiece";
  r.seq_len = 128;
  r.layers = 6;
  r.epochs = 1.0;
  r.audit.verdict = verdict;
  if (kind.family == MixerFamily::kGrassmann) {
    r.offsets = {1, 2, 4, 8, 12, 16};
    r.offset_mode = "per-layer";
  }
  return r;
}

RunRecord leaky_future(double qppl) {
  RunRecord r = lm_run("fut", "future", "leaky");
  r.audit.leak_horizon = 43;
  r.quarantined_best_valid_ppl = qppl;
  return r;
}

TEST(ReportFormat, Numbers) {
  EXPECT_EQ(fmt_ppl(261.365), "261.37");
  EXPECT_EQ(fmt_shortest(245.10), "245.1");
  EXPECT_EQ(fmt_shortest(190.03), "190.03");
  EXPECT_EQ(fmt_count(12607168), "12.61M");
  EXPECT_EQ(fmt_count(950), "950");
  EXPECT_EQ(fmt_epochs(30), "30");
  EXPECT_EQ(fmt_epochs(0.5), "0.50");
  EXPECT_EQ(fmt_sci(0.0), "0");
  EXPECT_EQ(quarantined_cell(12.3, 43), "~~12.30~~ QUARANTINED (LEAKY, horizon 43)");
  EXPECT_EQ(md_cell("a|b\nc"), "a\\|b c");
  EXPECT_EQ(file_stem("run one/../x"), "run_one_.._x");
}

TEST(ReportMixerKind, ParsesEveryNameAndNamesItBack) {
  for (const char* m : {"future", "past", "attention"}) {
    const MixerKind k = parse_run_mixer(m, "w");
    EXPECT_TRUE(pairing_fits(k.family, k.pairing)) << m;
    EXPECT_EQ(k.family == MixerFamily::kAttention ? family_name(k.family) : pairing_name(k.pairing), m);
  }
  EXPECT_EQ(parse_run_mixer("attention", "w").pairing, MixerPairing::kCausalMask);
  EXPECT_EQ(parse_run_mixer("future", "w").family, MixerFamily::kGrassmann);
  for (MixerFamily f : {MixerFamily::kGrassmann, MixerFamily::kAttention}) {
    EXPECT_EQ(parse_family(family_name(f), "w"), f);
  }
  for (MixerPairing p : {MixerPairing::kFuture, MixerPairing::kPast, MixerPairing::kCausalMask}) {
    EXPECT_EQ(parse_pairing(pairing_name(p), "w"), p);
  }
  EXPECT_EQ(parse_paper_pairing("future-as-written", "w"), MixerPairing::kFuture);
  EXPECT_EQ(parse_paper_pairing("causal-mask", "w"), MixerPairing::kCausalMask);
  EXPECT_FALSE(pairing_fits(MixerFamily::kAttention, MixerPairing::kPast));
  EXPECT_FALSE(pairing_fits(MixerFamily::kGrassmann, MixerPairing::kCausalMask));
  EXPECT_THROW(parse_family("", "w"), InputError);
  EXPECT_THROW(parse_pairing("future-as-written", "w"), InputError);  // paper.json only
  EXPECT_THROW(parse_paper_pairing("future", "w"), InputError);
}

// "family" and "pairing" are optional in summary.json: derived from "mixer" when absent,
// accepted when they agree.
TEST(ReportMixerKind, RunFamilyAndPairingDerivedOrRestated) {
  testing::ScratchDir dir;
  const auto summary = [&](const std::string& name, const std::string& keys) {
    testing::write_text(dir.path() / name / "summary.json",
                        R"({"task": "lm", )" + keys + R"(, "audit": {"verdict": "causal"}})");
    return load_run((dir.path() / name).string());
  };
  const RunRecord bare = summary("bare", R"("mixer": "attention")");
  EXPECT_EQ(bare.family, MixerFamily::kAttention);
  EXPECT_EQ(bare.pairing, MixerPairing::kCausalMask);
  const RunRecord full =
      summary("full", R"("mixer": "future", "family": "grassmann", "pairing": "future")");
  EXPECT_EQ(full.family, MixerFamily::kGrassmann);
  EXPECT_EQ(full.pairing, MixerPairing::kFuture);
  const RunRecord snli = [&] {
    testing::write_text(dir.path() / "snli" / "summary.json",
                        R"({"task": "snli", "head": "grassmann", "val_acc": [0.8]})");
    return load_run((dir.path() / "snli").string());
  }();
  EXPECT_FALSE(snli.family.has_value());
  EXPECT_FALSE(snli.pairing.has_value());
  EXPECT_EQ(mixer_label(snli), "-");
}

TEST(ReportLabels, ValidCellFollowsTheAudit) {
  RunRecord causal = lm_run("c", "past", "causal");
  causal.best_valid_ppl = 300.0;
  EXPECT_EQ(valid_ppl_cell(causal), "300.00");
  RunRecord unaudited = lm_run("u", "past", "");
  unaudited.best_valid_ppl = 300.0;
  EXPECT_EQ(valid_ppl_cell(unaudited), "withheld (not audited)");
  EXPECT_EQ(audit_label(unaudited), "NOT AUDITED");
  EXPECT_EQ(valid_ppl_cell(leaky_future(7.5)), "~~7.50~~ QUARANTINED (LEAKY, horizon 43)");
}

TEST(ReportLabels, ExpectedHorizon) {
  RunRecord r = lm_run("f", "future", "leaky");
  EXPECT_EQ(expected_horizon(r), 43);
  r.offset_mode = "all";
  EXPECT_EQ(expected_horizon(r), 96);
  EXPECT_FALSE(expected_horizon(lm_run("p", "past", "causal")).has_value());
}

TEST(ReportWikiText, UnauditedRunNeverShowsAValidNumber) {
  RunRecord unaudited = lm_run("u", "attention", "");
  unaudited.best_valid_ppl = 123.45;
  const auto rows = wikitext_rows(pub(), {unaudited});
  ASSERT_EQ(rows.back().run, "u");
  EXPECT_EQ(rows.back().valid_ppl, "withheld (not audited)");
  EXPECT_EQ(render_wikitext_table(rows).find("123.45"), std::string::npos);
  EXPECT_TRUE(ratio_rows(pub(), {unaudited}).back().origin != RowOrigin::kOurs);
}

TEST(ReportLiteral, FarBelowIsInconsistent) {
  const auto f = literal_findings(pub(), {leaky_future(20.0)});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].verdict, LiteralVerdict::kInconsistent);
  EXPECT_NE(f[0].markdown.find("inconsistent"), std::string::npos);
}

TEST(ReportLiteral, BelowButNotFarIsSuggestive) {
  const auto f = literal_findings(pub(), {leaky_future(200.0)});
  EXPECT_EQ(f[0].verdict, LiteralVerdict::kSuggestive);
  EXPECT_NE(f[0].markdown.find("does not settle"), std::string::npos);
}

TEST(ReportLiteral, AboveThePaperDoesNotSettleIt) {
  const auto f = literal_findings(pub(), {leaky_future(400.0)});
  EXPECT_EQ(f[0].verdict, LiteralVerdict::kNotSettled);
  EXPECT_NE(f[0].markdown.find("does not settle it (this run trained 1 of the paper's 30 epochs)"),
            std::string::npos)
      << f[0].markdown;
  EXPECT_EQ(f[0].markdown.find("inconsistent"), std::string::npos);
}

// A run shallower than every paper row at its L is compared with the row at that L, with the depth
// named; the report predicts nothing about the deeper model and quotes the paper-depth run if any.
TEST(ReportLiteral, ShallowRunQuotesThePaperDepthRunInsteadOfPredicting) {
  RunRecord small = leaky_future(2.67);
  small.name = "small";
  small.layers = 4;
  small.audit.leak_horizon = 15;
  const auto alone = literal_findings(pub(), {small});
  EXPECT_NE(alone[0].markdown.find("Caveat: the paper's row has 6 layers, this run 4."), std::string::npos)
      << alone[0].markdown;
  // The only expectation stated is that more epochs cannot raise a best figure.
  const std::string& md = alone[0].markdown;
  const size_t first = md.find("expected");
  ASSERT_NE(first, std::string::npos) << md;
  EXPECT_EQ(md.compare(first - 4, 21, "not expected to raise"), 0) << md;
  EXPECT_EQ(md.find("expected", first + 1), std::string::npos) << md;
  RunRecord deep = leaky_future(10.84);
  deep.name = "deep";
  const auto both = literal_findings(pub(), {small, deep});
  ASSERT_EQ(both.size(), 2u);
  EXPECT_NE(both[0].markdown.find("The literal run at the paper's depth, `deep`, reached ~~10.84~~ QUARANTINED "
                                  "(LEAKY, horizon 43) after 1 ep"),
            std::string::npos)
      << both[0].markdown;
  EXPECT_EQ(both[1].markdown.find("Caveat"), std::string::npos);
}

TEST(ReportLiteral, NoPaperRowAtThatSetting) {
  RunRecord r = leaky_future(5.0);
  r.seq_len = 64;
  EXPECT_EQ(literal_findings(pub(), {r})[0].verdict, LiteralVerdict::kNoComparison);
}

TEST(ReportLiteral, NoRunAndUnaudited) {
  EXPECT_EQ(literal_findings(pub(), {})[0].verdict, LiteralVerdict::kNoRun);
  RunRecord r = lm_run("f", "future", "");
  r.best_valid_ppl = 5.0;
  const auto f = literal_findings(pub(), {r});
  EXPECT_EQ(f[0].verdict, LiteralVerdict::kNotAudited);
  EXPECT_EQ(f[0].markdown.find("5.00"), std::string::npos);
}

TEST(ReportSnli, MeanAndSampleStd) {
  const MeanStd m = mean_std({0.85, 0.86, 0.87});
  EXPECT_NEAR(m.mean, 0.86, 1e-12);
  ASSERT_TRUE(m.std.has_value());
  EXPECT_NEAR(*m.std, 0.01, 1e-12);
  EXPECT_EQ(fmt_mean_std_percent(m), "86.00 ± 1.00% (n=3)");
  EXPECT_EQ(fmt_mean_std_percent(mean_std({0.5})), "50.00% (n=1)");
}

TEST(ReportSnli, RunsAppearInTheReport) {
  testing::ScratchDir dir;
  const auto runs = dir.path() / "runs";
  testing::copy_fixture_runs(runs);
  testing::write_text(runs / "snli-grassmann" / "summary.json",
                      R"({"run": "snli-grassmann", "task": "snli", "head": "grassmann",
                          "seeds": [1, 2, 3], "val_acc": [0.85, 0.86, 0.87],
                          "test_acc": [0.84, 0.85, 0.86], "params": 1234567, "epochs": 2,
                          "train_pairs": 8858, "features": "frozen DistilBERT-base-uncased"})");
  ReportOptions o = testing::fixture_options(dir.path() / "out");
  o.runs_dir = runs.string();
  generate_report(o);
  const std::string md = testing::read_text(dir.path() / "out" / "README.md");
  // Epochs and training pairs sit next to the accuracies, beside the paper's.
  EXPECT_NE(md.find("| ours: snli-grassmann | grassmann | frozen DistilBERT-base-uncased | "
                    "8,858 pairs vs the paper's SNLI train (550,152 pairs) | 2 (the paper: 20) | "
                    "1,2,3 | 86.00 ± 1.00% (n=3) | 85.00 ± 1.00% (n=3) | 1.23M |"),
            std::string::npos)
      << md;
  EXPECT_EQ(md.find("No SNLI runs recorded yet"), std::string::npos);
  // An SNLI run is not a WikiText-2 row.
  EXPECT_EQ(md.find("| ours: snli-grassmann | grassmann | past"), std::string::npos);
}

TEST(ReportLimitations, EveryRecordedDifferenceFromThePaper) {
  RunRecord r = lm_run("p", "past", "causal");
  r.layers = 4;
  r.d_model = 128;
  r.rank = 16;
  r.offsets = {1, 2, 4, 8};
  r.dataset = "wikitext-2 (v1 tokenized, <unk>)";
  EXPECT_EQ(run_differences(pub(), r),
            (std::vector<std::string>{"1 epoch vs the paper's 30",
                                      "4 layers vs the paper's 6 at L 128",
                                      "d_model 128 vs the paper's 256",
                                      "rank 16 vs the paper's 32",
                                      "offsets 1,2,4,8 vs the paper's 1,2,4,8,12,16",
                                      "text wikitext-2 (v1 tokenized, <unk>) vs the paper's raw"}));
  // The paper's own setting: only the unrecorded text variant remains.
  RunRecord same = lm_run("s", "past", "causal");
  same.epochs = 30.0;
  same.d_model = 256;
  same.rank = 32;
  EXPECT_EQ(run_differences(pub(), same),
            (std::vector<std::string>{"text variant (raw / tokenized) not recorded"}));
  RunRecord attn = lm_run("a", "attention", "causal");
  attn.epochs = 30.0;
  attn.heads = 8;
  attn.dataset = "wikitext-2-raw";
  EXPECT_EQ(run_differences(pub(), attn), (std::vector<std::string>{"8 heads vs the paper's 4"}));
}

TEST(ReportProvenance, Cells) {
  EXPECT_EQ(code_cell(std::nullopt), "older code (no provenance)");
  RunProvenance p;
  p.git_commit = "0123456789abcdef0123456789abcdef01234567";
  p.git_dirty = true;
  p.grassaudit_version = "0.3.0";
  p.threads = 2;
  EXPECT_EQ(code_cell(p), "`0123456789ab` (dirty), 0.3.0");
  p.git_commit = "unknown";
  p.git_dirty = false;
  EXPECT_EQ(code_cell(p), "commit unknown, 0.3.0");
  // One session says nothing new; a resumed run lists each session's steps and code.
  p.sessions = {TrainingSession{0, 9, true, "unknown", false}};
  EXPECT_EQ(code_cell(p), "commit unknown, 0.3.0");
  p.sessions = {TrainingSession{0, 509, false, "", false},
                TrainingSession{509, 1662, true, "0123456789abcdef0123456789abcdef01234567", true}};
  EXPECT_EQ(code_cell(p),
            "commit unknown, 0.3.0; 2 sessions: steps 0-509 code not recorded, steps 509-1662 `0123456789ab` (dirty)");
  p.sessions.clear();
  EXPECT_EQ(threads_cell(p, std::nullopt), "2 / not recorded");
  p.blas_threads = 2;
  EXPECT_EQ(threads_cell(p, 7), "2 / 2");  // the provenance record wins over the summary
  EXPECT_EQ(threads_cell(std::nullopt, 1), "1 / not recorded");
  EXPECT_EQ(data_cell(p), "none recorded");
  AuditFileInfo none;
  EXPECT_EQ(older_code_note(none), "produced by older code (no provenance)");
  AuditFileInfo old;
  old.present = true;
  EXPECT_EQ(older_code_note(old), "produced by older code (no provenance; audit by an older gate)");
  old.current_gate = true;
  EXPECT_EQ(older_code_note(old), "produced by older code (no provenance)");
}

TEST(ReportBench, ThreadsSayWhichPool) {
  BenchPoint p;
  p.file = "f.json";
  p.mixer = "past";
  p.batch = 1;
  p.seq_len = 128;
  p.tokens_per_second = 1000;
  p.threads = 1;
  p.blas = "OpenBLAS (x)";
  // Not recorded: the cell says so and a note explains OpenBLAS's own pool.
  EXPECT_NE(render_bench_table({p}).find("| 1 / not recorded |"), std::string::npos);
  EXPECT_NE(bench_threads_note({p}).find("a pthread OpenBLAS keeps its own pool"),
            std::string::npos);
  p.blas_threads = 1;
  EXPECT_NE(render_bench_table({p}).find("| 1 / 1 |"), std::string::npos);
  EXPECT_EQ(bench_threads_note({p}), "");
}

TEST(ReportFormat, Thousands) {
  EXPECT_EQ(fmt_thousands(550152), "550,152");
  EXPECT_EQ(fmt_thousands(8858), "8,858");
  EXPECT_EQ(fmt_thousands(999), "999");
  EXPECT_EQ(fmt_thousands(-1234567), "-1,234,567");
  EXPECT_EQ(quarantined_text("2.60 ± 0.14 (n=2)", 15),
            "~~2.60 ± 0.14 (n=2)~~ QUARANTINED (LEAKY, horizon 15)");
}

TEST(ReportPublished, SourcesStateWhatTheyStateAndNothingElse) {
  // Spot checks of reproductions.json against the files cited (see the Sources table).
  const ReproLmRow* grasslm = nullptr;
  const ReproLmRow* early = nullptr;
  for (const auto& r : pub().repro_lm) {
    if (r.name == "GrassLM") grasslm = &r;
    if (r.name == "alphaXiv paper-implementations, early") early = &r;
  }
  ASSERT_NE(grasslm, nullptr);
  EXPECT_EQ(grasslm->grassmann_params, 12607168.0);
  EXPECT_EQ(grasslm->text, "raw");
  EXPECT_EQ(grasslm->epochs, 30.0);
  EXPECT_EQ(grasslm->best_epoch_grassmann, 19);
  EXPECT_FALSE(grasslm->gap.has_value());
  ASSERT_NE(early, nullptr);
  ASSERT_TRUE(early->gap.has_value());
  EXPECT_EQ(early->gap->split, "test");
  EXPECT_NEAR(gap_percent(*early->gap), 22.59, 0.005);
  ASSERT_FALSE(early->transformer_by_epoch.empty());
  EXPECT_EQ(early->transformer_by_epoch.front().epoch, 1.0);
  int speedrun = 0, youdie_pre = 0;
  for (const auto& r : pub().repro_lm) {
    if (r.name == "kanenorman/grassmann") EXPECT_FALSE(r.gap.has_value());  // it publishes none
    if (r.name == "alphaXiv paper-implementations, speedrun") {
      ++speedrun;  // from its model code: pre-norm, N(0, 0.02), the whole offset list in every block
      EXPECT_EQ(r.norm, "pre");
      EXPECT_EQ(r.offset_mode, "all");
    }
    if (r.name == "youdie006/grassmann, pre-norm + N(0, 0.02) init") {
      ++youdie_pre;  // the smallest val_losses of its results.json files
      EXPECT_EQ(r.best_epoch_transformer, 10);
      EXPECT_EQ(r.best_epoch_grassmann, 4);
      EXPECT_EQ(r.transformer_params, 17356800.0);
    }
  }
  EXPECT_EQ(speedrun, 2);
  EXPECT_EQ(youdie_pre, 1);
  int all_offsets = 0;
  for (const auto& row : wikitext_rows(pub(), {}))
    if (row.pairing.find("all offsets in every layer") != std::string::npos) ++all_offsets;
  EXPECT_EQ(all_offsets, 2);
}

}  // namespace
}  // namespace grassaudit

namespace grassaudit {
TEST(ReportLabels, PreNormRunsSayWhereTheirLayerNormsSit) {
  RunRecord post = lm_run("p", "past", "causal");
  RunRecord pre = post;
  pre.norm = "pre";
  EXPECT_EQ(pairing_label(post).find("pre-norm"), std::string::npos);
  EXPECT_NE(pairing_label(pre).find("; pre-norm"), std::string::npos) << pairing_label(pre);
}
}  // namespace grassaudit

namespace grassaudit {
namespace {

// A CUDA run names its GPU and cuBLAS beside the host; one from before GPU provenance says the GPU
// was not recorded, never shows the host's CPU and BLAS alone as if they had run it.
TEST(ReportProvenance, ACudaRunNamesItsGpuOrThatItWasNotRecorded) {
  RunProvenance p;
  p.cpu = "AMD EPYC, 2 cores";
  p.blas = "OpenBLAS 0.3.21";
  p.device = "cpu";
  EXPECT_EQ(machine_cell(p), "AMD EPYC, 2 cores");
  EXPECT_EQ(blas_cell(p), "OpenBLAS 0.3.21");
  p.device = "cuda";
  EXPECT_EQ(machine_cell(p), "GPU not recorded (run by code from before GPU provenance); host AMD EPYC, 2 cores");
  EXPECT_EQ(blas_cell(p), "the GPU's BLAS not recorded; host OpenBLAS 0.3.21");
  p.gpu = "NVIDIA H200, 143771 MiB; CUDA Runtime 12.4; TF32 matmul on, cuDNN on; BLAS cuBLAS";
  EXPECT_EQ(machine_cell(p), "GPU " + p.gpu + "; host AMD EPYC, 2 cores");
  EXPECT_EQ(blas_cell(p), "cuBLAS; host OpenBLAS 0.3.21");
}

}  // namespace
}  // namespace grassaudit

namespace grassaudit {
namespace {

// `report --front-page FILE` puts the report's headline block into the page, nothing else moves.
TEST(ReportHeadline, TheBlockReplacesThePagesBlockAlone) {
  const std::string block = std::string(kHeadlineBegin) + "\nnew\n" + kHeadlineEnd + "\n";
  const std::string page = std::string("# top\n") + kHeadlineBegin + "\nold\n" + kHeadlineEnd + "\nrest\n";
  EXPECT_EQ(with_headline(page, block), "# top\n" + block + "rest\n");
  EXPECT_EQ(headline_block(with_headline(page, block)), block);
  EXPECT_THROW(with_headline("# no block\n", block), InputError);
}

}  // namespace
}  // namespace grassaudit
