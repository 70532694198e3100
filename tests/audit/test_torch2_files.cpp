// TorchScript written by PyTorch 2.6 (reference/make_torch2_fixtures.py, run in the Debian 13 root):
// every file loads in this build (LibTorch 1.13 with grassaudit's registered 2.x operators, or 2.6
// natively), reproduces PyTorch 2.6's own output on a fixed input, and gets the verdict and
// horizon brute force gave under 2.6. Files that cannot load get a one-line reason.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/serialization/import.h>
#include <torch/version.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "audit/audit_suite.h"
#include "formats/model_file.h"
#include "formats/torchscript/torchscript_archive.h"
#include "formats/torch/torch2_ops.h"
#include "formats/torchscript/torchscript_target.h"
#include "util/error.h"
#include "util/error_text.h"

using namespace grassaudit;
namespace fs = std::filesystem;

namespace {
const fs::path kAuditsFolder = fs::path(GRASSAUDIT_SOURCE_DIR) / "audits";
const fs::path kNotTs = fs::path(GRASSAUDIT_SOURCE_DIR) / "tests" / "audit" / "fixtures" / "torch2";

nlohmann::json suite() {
  std::ifstream f(kAuditsFolder / "torch2.json");
  return nlohmann::json::parse(f);
}

std::string load_error(const fs::path& p) {
  try {
    TorchScriptTarget t(p.string(), InputSpec::parse("tokens:64"));
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(Torch2Files, RegisteredOpsAreExactlyTheMissingOnes) {
  const auto& reg = ensure_torch2_ops();
  EXPECT_EQ(&reg, &ensure_torch2_ops());  // once
  const bool is_1x = std::string(TORCH_VERSION).rfind("1.", 0) == 0;
  if (is_1x)
    EXPECT_EQ(reg, (std::vector<std::string>{"aten::scaled_dot_product_attention", "aten::rms_norm"}));
  else
    EXPECT_TRUE(reg.empty()) << "LibTorch " << TORCH_VERSION << " has these ops; nothing may be registered over them";
}

TEST(Torch2Files, OutputsMatchPyTorch26) {
  auto refs = torch::jit::load((kAuditsFolder / "torch2" / "outputs.pt").string());
  std::map<std::string, at::Tensor> buf;
  for (const auto& b : refs.named_buffers()) buf[b.name] = b.value;
  int compared = 0;
  const auto cases = suite()["cases"];
  for (const auto& c : cases) {
    const std::string name = c["name"].get<std::string>();
    std::string key = name;
    for (auto& ch : key)
      if (ch == '-') ch = '_';
    ASSERT_TRUE(buf.count(key + "__input") && buf.count(key + "__output")) << name << " has no 2.6 output";
    SCOPED_TRACE(name);
    TorchScriptTarget t((kAuditsFolder / c["model"].get<std::string>()).string(), InputSpec::parse("tokens:64"));
    t.set_train(false);
    const at::Tensor want = buf[key + "__output"];
    const double scale = want.abs().max().item<double>();
    // 2.6 computed it without gradients (the fast paths of nn.TransformerEncoder and
    // nn.MultiheadAttention); with gradients the slow path runs: both must agree with it.
    for (bool grad : {false, true}) {
      at::AutoGradMode mode(grad);
      const at::Tensor got = t.forward(buf[key + "__input"]).detach();
      ASSERT_EQ(got.sizes(), want.sizes());
      const double rel = (got - want).abs().max().item<double>() / scale;
      EXPECT_LE(rel, 1e-5) << "grad " << grad << ": relative difference " << rel << " from PyTorch 2.6's output";
    }
    ++compared;
  }
  EXPECT_GE(compared, 20);
}

TEST(Torch2Files, VerdictsAndHorizonsMatchBruteForceUnder26) {
  AuditOptions o;
  auto results = run_audit_suite((kAuditsFolder / "torch2.json").string(), o, open_model_file);
  ASSERT_GE(results.size(), 20u);
  int leaky = 0, causal = 0;
  for (const auto& r : results) {
    EXPECT_TRUE(r.pass) << r.name << ": " << r.detail;
    (r.verdict == "leaky" ? leaky : causal) += 1;
  }
  EXPECT_GE(leaky, 8);
  EXPECT_GE(causal, 8);
}

TEST(Torch2Files, FilesThatCannotLoadSayWhyInOneLine) {
  struct Case {
    const char* file;
    std::vector<std::string> needles;
  };
  const bool is_1x = std::string(TORCH_VERSION).rfind("1.", 0) == 0;
  std::vector<Case> cases{
      {"exported.pt2", {"exported.pt2", "torch.export archive", "not TorchScript", "torch.jit.script"}},
      {"state_dict.pt", {"state_dict.pt", "torch.save file", "PyTorch 2.x", "torch.jit.trace"}},
      {"pickled_module.pt", {"pickled_module.pt", "torch.save file", "torch.jit.script"}},
  };
  if (is_1x)  // 2.6 has nonzero_static: the file loads there
    cases.push_back({"unknown_op.pt",
                     {"unknown_op.pt", "aten::nonzero_static", "PyTorch 2.x", "file format version", "LibTorch 1.13",
                      "CMAKE_PREFIX_PATH"}});
  for (const auto& c : cases) {
    SCOPED_TRACE(c.file);
    const std::string msg = load_error(kNotTs / c.file);
    ASSERT_FALSE(msg.empty()) << "loaded";
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    EXPECT_EQ(msg.find("()"), std::string::npos) << "an empty reason: " << msg;
    for (const auto& n : c.needles) EXPECT_NE(msg.find(n), std::string::npos) << "'" << n << "' not in: " << msg;
  }
}

TEST(Torch2Files, FirstMeaningfulLineSkipsBlankLinesAndEnforcePrefixes) {
  EXPECT_EQ(first_meaningful_line("\n\n  Unknown builtin op: aten::x.\nHere are"), "Unknown builtin op: aten::x.");
  EXPECT_EQ(first_meaningful_line("[enforce fail at inline_container.cc:129] . file in archive is not in a subdirectory"),
            "file in archive is not in a subdirectory");
  EXPECT_EQ(first_meaningful_line(" \n\t\n"), "");
  // LibTorch 2.x: a c10 error whose message is empty holds only its backtrace.
  EXPECT_EQ(first_meaningful_line("\nException raised from f at x.cpp:1 (most recent call first):\nframe #0: g\n"), "");
}
