#include "report/detail_tables.h"

#include <fmt/format.h>

#include "report/format.h"
#include "report/labels.h"

namespace grassaudit {

std::string render_run_details(const std::vector<RunRecord>& runs) {
  MdTable t;
  t.header = {"run", "mixer / pairing", "test ppl", "d_model", "rank", "tokens seen", "wall s",
              "tokens/s", "threads", "BLAS", "weights sha256"};
  for (const auto& r : runs) {
    if (r.task != "lm") continue;
    t.rows.push_back({
        r.name,
        mixer_label(r) + " / " + (r.pairing ? pairing_name(*r.pairing) : "-"),
        test_ppl_cell(r),
        or_dash(r.d_model),
        r.family == Family::kAttention ? "-" : or_dash(r.rank),
        r.tokens_seen ? fmt_count(*r.tokens_seen) : "?",
        r.wall_seconds ? fmt::format("{:.0f}", *r.wall_seconds) : "?",
        r.tokens_per_second ? fmt::format("{:.0f}", *r.tokens_per_second) : "?",
        or_dash(r.threads),
        r.blas.empty() ? "?" : r.blas,
        r.audit.weights_sha256.empty() ? "-" : "`" + r.audit.weights_sha256.substr(0, 12) + "`",
    });
  }
  return t.rows.empty() ? std::string() : t.render();
}

std::string render_bench_table(const std::vector<BenchPoint>& bench) {
  MdTable t;
  t.header = {"mixer", "batch", "L", "tokens/s", "ms/step median (min-max)", "threads", "BLAS",
              "peak RSS MB", "machine", "file"};
  for (const auto& p : bench) {
    std::string ms = "?";
    if (p.ms_median) {
      ms = fmt::format("{:.1f}", *p.ms_median);
      if (p.ms_min && p.ms_max) ms += fmt::format(" ({:.1f}-{:.1f})", *p.ms_min, *p.ms_max);
    }
    t.rows.push_back({p.mixer, std::to_string(p.batch), std::to_string(p.seq_len),
                      fmt::format("{:.0f}", p.tokens_per_second), ms, or_dash(p.threads),
                      p.blas.empty() ? "?" : p.blas,
                      p.peak_rss_mb ? fmt::format("{:.0f}", *p.peak_rss_mb) : "?",
                      p.machine.empty() ? "?" : p.machine, p.file});
  }
  return t.rows.empty() ? std::string() : t.render();
}

}  // namespace grassaudit
