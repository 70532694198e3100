// The SNLI JSON-lines reader (plain or gzip, chosen by the magic bytes) on arbitrary file bytes:
// it returns records or throws InputError; nothing else.
#include "fuzz_common.h"
#include "text/snli.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = fuzz::write_scratch(data, size, ".jsonl");
  try {
    grassaudit::SnliData d = grassaudit::read_snli(path);
    int64_t total = d.skipped_no_label;
    for (int64_t n : d.label_counts) total += n;
    if (total != d.lines || static_cast<int64_t>(d.pairs.size()) + d.skipped_no_label != d.lines) __builtin_trap();
    for (const auto& p : d.pairs)
      if (p.label < 0 || p.label >= grassaudit::kNumSnliLabels) __builtin_trap();
  } catch (const grassaudit::InputError&) {
  }
  return 0;
}
