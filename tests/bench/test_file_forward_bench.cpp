// bench --files: plain forwards through model files of any format the audit reads, side by side.
#include <gtest/gtest.h>

#include <string>

#include "bench/file_forward_bench.h"
#include "util/error.h"

namespace grassaudit {
namespace {

const std::string kAudits = std::string(GRASSAUDIT_SOURCE_DIR) + "/audits/";

TEST(FileForwardBench, TimesEachFileThroughTheSeam) {
  FileForwardOptions o;
  o.files = {kAudits + "export/gpt_block.pt2", kAudits + "controls/causal_attention.pt"};
  o.inputs = {InputBinding::parse("tokens:64")};
  o.batch = 2;
  o.seq_len = 16;
  o.reps = 2;
  const auto t = bench_file_forward(o);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].format, "torch.export");
  EXPECT_EQ(t[1].format, "torchscript");
  for (const auto& x : t) {
    EXPECT_GT(x.ms.median, 0.0);
    EXPECT_LE(x.ms.min, x.ms.median);
    EXPECT_LE(x.ms.median, x.ms.max);
    EXPECT_NEAR(x.tokens_per_second, 32.0 / (x.ms.median / 1000.0), 1e-6 * x.tokens_per_second);
  }
  ASSERT_TRUE(t[0].max_rel_diff.has_value());
  EXPECT_EQ(*t[0].max_rel_diff, 0.0);  // the first file against itself
}

TEST(FileForwardBench, AFileThatDoesNotOpenIsOneLine) {
  FileForwardOptions o;
  o.files = {kAudits + "export.json"};
  o.inputs = {InputBinding::parse("tokens:64")};
  EXPECT_THROW(bench_file_forward(o), InputError);
  o.files = {};
  EXPECT_THROW(bench_file_forward(o), InputError);
}

}  // namespace
}  // namespace grassaudit
