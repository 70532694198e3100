// Malformed artifacts: each is an InputError that names the offending file.
#include <gtest/gtest.h>

#include <string>

#include "report/published.h"
#include "report/report.h"
#include "report/runs.h"
#include "report_test_util.h"
#include "util/error.h"

namespace grassaudit {
namespace {

using testing::ScratchDir;
namespace fs = std::filesystem;

// Copies the fixture runs to a scratch folder, applies `mutate`, runs the generator and
// returns the InputError message (empty if none was thrown).
template <typename F>
std::string report_error(F mutate) {
  ScratchDir dir;
  const fs::path runs = dir.path() / "runs";
  testing::copy_fixture_runs(runs);
  mutate(runs);
  ReportOptions o = testing::fixture_options(dir.path() / "out");
  o.runs_dir = runs.string();
  try {
    generate_report(o);
  } catch (const InputError& e) {
    EXPECT_FALSE(fs::exists(dir.path() / "out" / "README.md")) << "nothing written on error";
    return e.what();
  }
  return "";
}

std::string leaky_summary(const std::string& extra) {
  return R"({"run": "x", "task": "lm", "mixer": "future", "pairing": "future",
             "audit": {"verdict": "leaky", "leak_horizon": 43},
             "quarantined_best_valid_ppl": 5.0)" +
         extra + "}";
}

TEST(ReportErrors, LeakyRunWithPlainPerplexityKeyIsRejected) {
  const std::string msg = report_error([](const fs::path& runs) {
    testing::write_text(runs / "bad-leaky" / "summary.json",
                        leaky_summary(R"(, "best_valid_ppl": 5.0)"));
  });
  EXPECT_NE(msg.find("bad-leaky/summary.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find("malformed artifact"), std::string::npos) << msg;
  EXPECT_NE(msg.find("best_valid_ppl"), std::string::npos) << msg;
}

TEST(ReportErrors, LeakyRunWithPlainTestPerplexityIsRejected) {
  const std::string msg = report_error([](const fs::path& runs) {
    testing::write_text(runs / "bad-leaky" / "summary.json", leaky_summary(R"(, "test_ppl": 5.0)"));
  });
  EXPECT_NE(msg.find("test_ppl"), std::string::npos) << msg;
}

TEST(ReportErrors, LeakyEvalLineWithPlainPplIsRejected) {
  const std::string msg = report_error([](const fs::path& runs) {
    testing::write_text(runs / "future-wp-l128-n6" / "metrics.jsonl",
                        "{\"type\":\"eval\",\"epoch\":1,\"split\":\"valid\",\"ppl\":6.0,"
                        "\"audit_verdict\":\"leaky\"}\n");
  });
  EXPECT_NE(msg.find("future-wp-l128-n6/metrics.jsonl"), std::string::npos) << msg;
  EXPECT_NE(msg.find("malformed artifact"), std::string::npos) << msg;
}

TEST(ReportErrors, CausalRunWithQuarantinedKeyIsRejected) {
  const std::string msg = report_error([](const fs::path& runs) {
    testing::write_text(runs / "odd" / "summary.json",
                        R"({"mixer": "past", "audit": {"verdict": "causal"},
                            "quarantined_best_valid_ppl": 5.0})");
  });
  EXPECT_NE(msg.find("odd/summary.json"), std::string::npos) << msg;
}

TEST(ReportErrors, BadJsonInSummaryNamesTheFile) {
  const std::string msg = report_error([](const fs::path& runs) {
    testing::write_text(runs / "past-wp-l128-n6" / "summary.json", "{\"mixer\": \"past\",");
  });
  EXPECT_NE(msg.find("past-wp-l128-n6/summary.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find("invalid JSON"), std::string::npos) << msg;
}

TEST(ReportErrors, BadJsonLineInMetricsNamesFileAndLine) {
  const std::string msg = report_error([](const fs::path& runs) {
    testing::write_text(runs / "attn-wp-l128-n6" / "metrics.jsonl",
                        "{\"type\":\"train\",\"step\":1}\n\n{\"type\": eval}\n");
  });
  EXPECT_NE(msg.find("attn-wp-l128-n6/metrics.jsonl:3"), std::string::npos) << msg;
}

TEST(ReportErrors, BadJsonInAuditNamesTheFile) {
  const std::string msg = report_error([](const fs::path& runs) {
    testing::write_text(runs / "attn-wp-l128-n6" / "audit.json", "not json");
  });
  EXPECT_NE(msg.find("attn-wp-l128-n6/audit.json"), std::string::npos) << msg;
}

TEST(ReportErrors, AuditVerdictContradictingSummary) {
  const std::string msg = report_error([](const fs::path& runs) {
    testing::write_text(runs / "attn-wp-l128-n6" / "audit.json", R"({"verdict": "leaky"})");
  });
  EXPECT_NE(msg.find("contradicts"), std::string::npos) << msg;
}

TEST(ReportErrors, WrongTypeNamesFileAndKey) {
  const std::string msg = report_error([](const fs::path& runs) {
    testing::write_text(runs / "typed" / "summary.json",
                        R"({"mixer": "past", "seq_len": "long", "audit": {"verdict": "causal"}})");
  });
  EXPECT_NE(msg.find("typed/summary.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'seq_len'"), std::string::npos) << msg;
}

TEST(ReportErrors, UnknownVerdict) {
  const std::string msg = report_error([](const fs::path& runs) {
    testing::write_text(runs / "v" / "summary.json",
                        R"({"mixer": "past", "audit": {"verdict": "probably fine"}})");
  });
  EXPECT_NE(msg.find("v/summary.json"), std::string::npos) << msg;
}

// --- mixer names: parsed once where read; a bad or contradictory one is a malformed artifact ---

std::string lm_summary(const std::string& keys) {
  return R"({"run": "m", "task": "lm", )" + keys + R"(, "audit": {"verdict": "causal"}})";
}

TEST(ReportErrors, UnknownMixerNamesFileAndValue) {
  const std::string msg = report_error([](const fs::path& runs) {
    testing::write_text(runs / "m" / "summary.json", lm_summary(R"("mixer": "lstm")"));
  });
  EXPECT_NE(msg.find("m/summary.json: 'mixer' must be future, past or attention, got \"lstm\""),
            std::string::npos)
      << msg;
}

TEST(ReportErrors, FamilyContradictingMixerIsRejected) {
  const std::string msg = report_error([](const fs::path& runs) {
    testing::write_text(runs / "m" / "summary.json",
                        lm_summary(R"("mixer": "attention", "family": "grassmann")"));
  });
  EXPECT_NE(msg.find("m/summary.json: malformed artifact: 'family' \"grassmann\" contradicts "
                     "'mixer' \"attention\""),
            std::string::npos)
      << msg;
}

TEST(ReportErrors, UnknownFamilyIsRejected) {
  const std::string msg = report_error([](const fs::path& runs) {
    testing::write_text(runs / "m" / "summary.json",
                        lm_summary(R"("mixer": "past", "family": "Grassmann")"));
  });
  EXPECT_NE(msg.find("m/summary.json: 'family' must be grassmann or attention, got \"Grassmann\""),
            std::string::npos)
      << msg;
}

TEST(ReportErrors, PairingContradictingMixerIsRejected) {
  const std::string msg = report_error([](const fs::path& runs) {
    testing::write_text(runs / "m" / "summary.json",
                        lm_summary(R"("mixer": "past", "pairing": "future")"));
  });
  EXPECT_NE(msg.find("m/summary.json: malformed artifact: 'pairing' \"future\" contradicts "
                     "'mixer' \"past\""),
            std::string::npos)
      << msg;
}

TEST(ReportErrors, UnknownPairingIsRejected) {
  const std::string msg = report_error([](const fs::path& runs) {
    testing::write_text(runs / "m" / "summary.json",
                        lm_summary(R"("mixer": "attention", "pairing": "causal mask")"));
  });
  EXPECT_NE(msg.find("m/summary.json: 'pairing' must be future, past or causal-mask, got "
                     "\"causal mask\""),
            std::string::npos)
      << msg;
}

// Copies reference/published to a scratch reference folder, replaces the first `from` in
// `file` with `to`, and returns load_published's InputError message (empty if none).
std::string published_error(const std::string& file, const std::string& from,
                            const std::string& to) {
  ScratchDir dir;
  const fs::path published = dir.path() / "published";
  fs::copy(testing::source_dir() / "reference" / "published", published,
           fs::copy_options::recursive);
  std::string text = testing::read_text(published / file);
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from << " not in " << file;
  if (at == std::string::npos) return "";
  testing::write_text(published / file, text.replace(at, from.size(), to));
  try {
    load_published(dir.path().string());
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(ReportErrors, PaperRowWithUnknownMixer) {
  const std::string msg = published_error("paper.json", R"("mixer": "attention")",
                                          R"("mixer": "transformer")");
  EXPECT_NE(msg.find("paper.json (wikitext2.rows[0]): 'mixer' must be grassmann or attention, got "
                     "\"transformer\""),
            std::string::npos)
      << msg;
}

TEST(ReportErrors, PaperRowWhosePairingDoesNotFitItsMixer) {
  const std::string msg = published_error("paper.json", R"("pairing": "causal-mask")",
                                          R"("pairing": "future-as-written")");
  EXPECT_NE(msg.find("paper.json (wikitext2.rows[0]): 'pairing' \"future-as-written\" does not "
                     "fit 'mixer' \"attention\""),
            std::string::npos)
      << msg;
}

TEST(ReportErrors, PaperRowWithUnknownPairing) {
  const std::string msg = published_error("paper.json", R"("pairing": "future-as-written")",
                                          R"("pairing": "future")");
  EXPECT_NE(msg.find("paper.json (wikitext2.rows[1]): 'pairing' must be future-as-written, past or "
                     "causal-mask, got \"future\""),
            std::string::npos)
      << msg;
}

TEST(ReportErrors, ReproductionPairingMustBeAGrassmannPairing) {
  const std::string msg = published_error("reproductions.json", R"("pairing": "past")",
                                          R"("pairing": "causal-mask")");
  EXPECT_NE(msg.find("reproductions.json (wikitext2[0]): 'pairing' is the Grassmann model's: "
                     "future or past, got \"causal-mask\""),
            std::string::npos)
      << msg;
  EXPECT_NE(published_error("reproductions.json", R"("pairing": "past")", R"("pairing": "pas")")
                .find("'pairing' must be future, past or causal-mask, got \"pas\""),
            std::string::npos);
}

// Every stated field of a reproduction names the file and commit it was read from.
TEST(ReportErrors, UncitedReproductionFieldIsRejected) {
  // GrassLM's "epochs" loses its citation.
  const std::string msg = published_error(
      "reproductions.json", R"("fields": ["tokenizer", "text", "seq_len", "layers", "d_model", "epochs", "best_epoch_grassmann")",
      R"("fields": ["tokenizer", "text", "seq_len", "layers", "d_model", "best_epoch_grassmann")");
  EXPECT_NE(msg.find("reproductions.json (wikitext2[3]): stated but not cited (give the file and "
                     "commit it was read from): epochs"),
            std::string::npos)
      << msg;
}

TEST(ReportErrors, CitationOfUnknownFieldIsRejected) {
  const std::string msg = published_error("reproductions.json", R"("fields": ["epochs"])",
                                          R"("fields": ["epoch"])");
  EXPECT_NE(msg.find("(citations[2]): cites unknown field 'epoch'"), std::string::npos) << msg;
}

TEST(ReportErrors, CitationCommitMustBeAFullHash) {
  const std::string msg = published_error("reproductions.json",
                                          R"("commit": "f8e6ad23389dbb38f3f19c60036291b496226368")",
                                          R"("commit": "f8e6ad2")");
  EXPECT_NE(msg.find("'commit' must be 40 lower-case hex digits, got \"f8e6ad2\""),
            std::string::npos)
      << msg;
}

// The SPEC's "24%" for the early alphaXiv run is not what its perplexities give (22.6%).
TEST(ReportErrors, PublishedGapMustMatchItsPerplexities) {
  const std::string msg = published_error("reproductions.json", R"("text": "22.6%")",
                                          R"("text": "24%")");
  EXPECT_NE(msg.find("reproductions.json (wikitext2[0]): gap_published \"24%\" does not match its "
                     "perplexities (242.94 / 198.17 gives 22.59%)"),
            std::string::npos)
      << msg;
  // A bare string says nothing about what the gap was computed from.
  const std::string bare = published_error(
      "reproductions.json",
      R"("gap_published": {"text": "22.6%", "split": "test", "transformer_ppl": 198.17, "grassmann_ppl": 242.94})",
      R"("gap_published": "24%")");
  EXPECT_NE(bare.find("'gap_published' must be an object"), std::string::npos) << bare;
}

std::string provenance_error(const std::string& provenance) {
  return report_error([&](const fs::path& runs) {
    testing::write_text(runs / "with-provenance" / "summary.json",
                        R"({"task": "lm", "mixer": "past", "audit": {"verdict": "causal"},
                            "best_valid_ppl": 300.0, "provenance": )" +
                            provenance + "}");
  });
}

std::string good_provenance(const std::string& replace_key = "", const std::string& with = "") {
  std::string p = R"({"git_commit": "0123456789abcdef0123456789abcdef01234567", "git_dirty": true,
      "grassaudit_version": "0.3.0", "libtorch_version": "1.13.0", "blas": "OpenBLAS",
      "threads": 2, "world_size": 1, "device": "cpu", "command_line": "grassaudit train",
      "data_sha256": {"wikitext-2/wiki.train.tokens":
                      "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}})";
  if (!replace_key.empty()) {
    const size_t at = p.find(replace_key);
    EXPECT_NE(at, std::string::npos);
    p.replace(at, replace_key.size(), with);
  }
  return p;
}

TEST(ReportErrors, ProvenanceIsCheckedWhenPresent) {
  EXPECT_EQ(provenance_error(good_provenance()), "");
  const std::string commit = provenance_error(
      good_provenance(R"("git_commit": "0123456789abcdef0123456789abcdef01234567")",
                      R"("git_commit": "0123456")"));
  EXPECT_NE(commit.find("with-provenance/summary.json: provenance: 'git_commit' must be 40 hex "
                        "digits or \"unknown\", got \"0123456\""),
            std::string::npos)
      << commit;
  const std::string hash = provenance_error(good_provenance(
      R"("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")", R"("aaaa")"));
  EXPECT_NE(hash.find("provenance: data_sha256 'wikitext-2/wiki.train.tokens' must be 64 lower-case "
                      "hex digits"),
            std::string::npos)
      << hash;
  const std::string missing =
      provenance_error(good_provenance(R"("libtorch_version": "1.13.0", )", ""));
  EXPECT_NE(missing.find("provenance: missing 'libtorch_version'"), std::string::npos) << missing;
  const std::string dirty =
      provenance_error(good_provenance(R"("git_dirty": true)", R"("git_dirty": "yes")"));
  EXPECT_NE(dirty.find("provenance: 'git_dirty' must be true or false"), std::string::npos) << dirty;
  const std::string sessions_ok = provenance_error(good_provenance(
      R"("threads": 2,)", R"("threads": 2, "sessions": [{"first_step": 0, "last_step": 5, "recorded": false},
          {"first_step": 5, "last_step": 9, "git_commit": "unknown", "git_dirty": false}],)"));
  EXPECT_EQ(sessions_ok, "");
  const std::string steps = provenance_error(good_provenance(
      R"("threads": 2,)", R"("threads": 2, "sessions": [{"first_step": 5, "last_step": 4, "recorded": false}],)"));
  EXPECT_NE(steps.find("provenance: sessions[0]: steps must satisfy 0 <= first_step <= last_step"),
            std::string::npos)
      << steps;
  const std::string commit_missing = provenance_error(good_provenance(
      R"("threads": 2,)", R"("threads": 2, "sessions": [{"first_step": 0, "last_step": 4, "git_dirty": false}],)"));
  EXPECT_NE(commit_missing.find("provenance: sessions[0]: missing 'git_commit'"), std::string::npos)
      << commit_missing;
}

TEST(ReportErrors, BadBenchJsonNamesTheFile) {
  ScratchDir dir;
  testing::write_text(dir.path() / "bench" / "broken.json", "{\"results\": [");
  ReportOptions o = testing::fixture_options(dir.path() / "out");
  o.bench_dir = (dir.path() / "bench").string();
  try {
    generate_report(o);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("bench/broken.json"), std::string::npos) << e.what();
  }
}

TEST(ReportErrors, MissingReferenceNamesTheFile) {
  ScratchDir dir;
  ReportOptions o = testing::fixture_options(dir.path() / "out");
  o.reference_dir = (dir.path() / "nowhere").string();
  try {
    generate_report(o);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("published/paper.json"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace grassaudit
