#include "report/detail_tables.h"

#include <fmt/format.h>

#include "report/format.h"
#include "report/labels.h"

namespace grassaudit {

std::string render_run_details(const std::vector<RunRecord>& runs) {
  MdTable t;
  t.header = {"run", "mixer / pairing", "test ppl", "d_model", "rank", "seed", "tokens seen",
              "wall s", "tokens/s", "threads (OpenMP / BLAS)", "BLAS", "code", "weights sha256"};
  for (const auto& r : runs) {
    if (r.task != "lm") continue;
    t.rows.push_back({
        r.name,
        mixer_label(r) + " / " + (r.pairing ? pairing_name(*r.pairing) : "-"),
        test_ppl_cell(r),
        or_dash(r.d_model),
        r.family == MixerFamily::kAttention ? "-" : or_dash(r.rank),
        or_dash(r.seed),
        r.tokens_seen ? fmt_count(*r.tokens_seen) : "?",
        r.wall_seconds ? fmt::format("{:.0f}", *r.wall_seconds) : "?",
        r.tokens_per_second ? fmt::format("{:.0f}", *r.tokens_per_second) : "?",
        threads_cell(r.provenance, r.threads),
        r.blas.empty() ? "?" : r.blas,
        code_cell(r.provenance),
        r.audit.weights_sha256.empty() ? "-" : "`" + r.audit.weights_sha256.substr(0, 12) + "`",
    });
  }
  return t.rows.empty() ? std::string() : t.render();
}

std::string render_samples(const std::vector<RunRecord>& runs) {
  std::string md;
  for (const auto& r : runs) {
    if (r.task != "lm" || standing_of(r) != Standing::kValid || r.d_model.value_or(0) != 256) continue;
    if (!r.sample) {
      md += fmt::format("- **{}**: no sample.json (the run predates samples, and its checkpoints are not "
                        "committed: `grassaudit generate --checkpoint .../best.ckpt --json` makes one)\n",
                        r.name);
      continue;
    }
    const RunSample& s = *r.sample;
    md += fmt::format("- **{}** (seed {}, temperature {}, top-k {}): *{}* → {}\n", r.name, or_dash(s.seed),
                      s.temperature ? fmt::format("{:g}", *s.temperature) : "-", or_dash(s.top_k), s.prompt, s.text);
  }
  return md;
}

std::string render_provenance_table(const std::vector<RunRecord>& runs) {
  MdTable t;
  t.header = {"run", "code (git commit, grassaudit)", "LibTorch", "BLAS",
              "threads (OpenMP / BLAS), world size, device, precision, CPU", "data SHA-256", "command line",
              "audit.json"};
  for (const auto& r : runs) {
    const std::string gate = r.task == "lm" ? audit_gate_cell(r.audit_file) : "- (no causality audit for SNLI heads)";
    if (!r.provenance) {
      t.rows.push_back({r.name, older_code_note(r.audit_file), "-", "-", "-", "-", "-", gate});
      continue;
    }
    const RunProvenance& p = *r.provenance;
    t.rows.push_back({r.name, code_cell(p), p.libtorch_version, blas_cell(p),
                      threads_cell(p, std::nullopt) + ", world " + std::to_string(p.world_size) +
                          ", " + p.device + ", " + p.precision + ", " + machine_cell(p),
                      data_cell(p), p.command_line.empty() ? "not recorded" : "`" + p.command_line + "`",
                      gate});
  }
  return t.rows.empty() ? std::string() : t.render();
}

std::string render_bench_table(const std::vector<BenchPoint>& bench) {
  MdTable t;
  t.header = {"mixer", "batch", "L", "tokens/s", "ms/step median (min-max)",
              "threads (OpenMP / BLAS)", "BLAS", "peak RSS MB", "machine", "file"};
  for (const auto& p : bench) {
    std::string ms = "?";
    if (p.ms_median) {
      ms = fmt::format("{:.1f}", *p.ms_median);
      if (p.ms_min && p.ms_max) ms += fmt::format(" ({:.1f}-{:.1f})", *p.ms_min, *p.ms_max);
    }
    t.rows.push_back({p.mixer, std::to_string(p.batch), std::to_string(p.seq_len),
                      fmt::format("{:.0f}", p.tokens_per_second), ms,
                      or_dash(p.threads) + " / " +
                          (p.blas_threads ? std::to_string(*p.blas_threads) : "not recorded"),
                      p.blas.empty() ? "?" : p.blas,
                      p.peak_rss_mb ? fmt::format("{:.0f}", *p.peak_rss_mb) : "?",
                      p.machine.empty() ? "?" : p.machine, p.file});
  }
  return t.rows.empty() ? std::string() : t.render();
}

std::string bench_threads_note(const std::vector<BenchPoint>& bench) {
  bool missing = false, openblas = false;
  for (const auto& p : bench) {
    if (!p.blas_threads) {
      missing = true;
      if (p.blas.rfind("OpenBLAS", 0) == 0) openblas = true;
    }
  }
  if (!missing) return "";
  std::string out =
      "\"threads\" is LibTorch's OpenMP pool (intra-op threads). Where the BLAS pool is \"not "
      "recorded\", the file does not say how many threads the GEMMs used";
  if (openblas) {
    out += ": a pthread OpenBLAS keeps its own pool, one thread per core unless it is sized "
           "explicitly, so \"1\" is not one thread for the matrix products (see the machine "
           "column and the bench folder's README)";
  }
  return out + ".";
}

}  // namespace grassaudit
