#include "report/labels.h"

#include "report/format.h"

namespace grassaudit {

std::string mixer_label(const RunRecord& run) {
  return run.family ? family_name(*run.family) : "-";
}

std::string pairing_words(MixerPairing pairing) {
  switch (pairing) {
    case MixerPairing::kFuture:
      return "future (paper-literal)";
    case MixerPairing::kPast:
      return "past";
    case MixerPairing::kCausalMask:
      return "causal mask";
  }
  return "?";
}

std::string pairing_label(const RunRecord& run) {
  if (!run.pairing) return "-";
  std::string out = pairing_words(*run.pairing);
  if (run.family == MixerFamily::kGrassmann && !run.offsets.empty()) {
    out += "; offsets " + fmt_offsets(run.offsets);
    if (run.offset_mode == "per-layer") out += " one per layer";
    if (run.offset_mode == "all") out += " all in every layer";
  }
  if (run.norm == "pre") out += "; pre-norm";
  return out;
}

std::string tokenizer_label(const RunRecord& run) {
  std::string out;
  if (run.tokenizer == "wordpiece") {
    out = "WordPiece";
  } else if (run.tokenizer == "word") {
    out = "word-level";
  } else if (run.tokenizer.empty()) {
    out = "?";
  } else {
    out = run.tokenizer;
  }
  return out;
}

std::string budget_label(const RunRecord& run) {
  std::string out;
  if (run.epochs) out = fmt_epochs(*run.epochs) + " ep";
  if (run.tokens_seen) {
    const std::string tok = fmt_count(*run.tokens_seen) + " tok";
    out = out.empty() ? tok : out + " (" + tok + ")";
  }
  return out.empty() ? "?" : out;
}

std::string precision_label(const RunRecord& run) {
  return run.provenance ? run.provenance->precision : std::string("fp32");
}

std::string audit_label(const RunRecord& run) {
  switch (standing_of(run)) {
    case Standing::kValid: {
      std::string out = "CAUSAL";
      std::string detail;
      if (run.audit.leak_horizon) detail = "horizon " + std::to_string(*run.audit.leak_horizon);
      if (run.audit.max_effect) {
        detail += (detail.empty() ? "" : ", ") + std::string("max effect ") +
                  fmt_sci(*run.audit.max_effect);
      }
      return detail.empty() ? out : out + " (" + detail + ")";
    }
    case Standing::kQuarantined: {
      std::string out = "LEAKY";
      if (run.audit.leak_horizon) {
        out += " (horizon " + std::to_string(*run.audit.leak_horizon);
        if (auto e = expected_horizon(run)) out += "; offsets imply " + std::to_string(*e);
        out += ")";
      }
      return out;
    }
    case Standing::kUnaudited:
      break;
  }
  return "NOT AUDITED";
}

namespace {
std::string ppl_cell(const RunRecord& run, const std::optional<double>& plain,
                     const std::optional<double>& quarantined) {
  switch (standing_of(run)) {
    case Standing::kValid:
      return plain ? fmt_ppl(*plain) : "not recorded";
    case Standing::kQuarantined:
      if (quarantined) return quarantined_cell(*quarantined, run.audit.leak_horizon);
      return "QUARANTINED (LEAKY), none recorded";
    case Standing::kUnaudited:
      break;
  }
  return "withheld (not audited)";
}
}  // namespace

std::string valid_ppl_cell(const RunRecord& run) {
  return ppl_cell(run, run.best_valid_ppl, run.quarantined_best_valid_ppl);
}

std::string test_ppl_cell(const RunRecord& run) {
  return ppl_cell(run, run.test_ppl, run.quarantined_test_ppl);
}

}  // namespace grassaudit
