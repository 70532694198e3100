// ONNX models written by torch.onnx.export under PyTorch 2.6 (reference/make_onnx_fixtures.py,
// run in the Debian 13 root), run by grassaudit's ONNX interpreter: every file reproduces ONNX
// Runtime's outputs (recorded beside it) within 1e-5 relative in float32, at two lengths, the
// streaming steps one call at a time and streamed chunk by chunk; and every file gets the verdict
// and horizon brute force gave (audits/onnx.json).
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "audit/audit_suite.h"
#include "audit/causality_audit.h"
#include "formats/model_file.h"
#include "formats/onnx/onnx_program.h"
#include "formats/onnx/onnx_tensor.h"
#include "formats/onnx/streaming_program.h"
#include "util/error.h"

using namespace grassaudit;
namespace fs = std::filesystem;

namespace {
const fs::path kAudits = fs::path(GRASSAUDIT_SOURCE_DIR) / "audits";
const fs::path kFixtures = fs::path(GRASSAUDIT_SOURCE_DIR) / "tests" / "fixtures" / "onnx";

nlohmann::json manifest() {
  std::ifstream f(kFixtures / "manifest.json");
  return nlohmann::json::parse(f);
}

at::Tensor read_tensor(const std::string& name) {
  std::ifstream f(kFixtures / name, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  onnx::TensorProto t;
  if (!t.ParseFromString(ss.str())) throw std::runtime_error(name + " does not parse");
  return onnx_rt::tensor_from_proto(t, "", [&](const std::string& why) { throw std::runtime_error(why); });
}

// |got - want| <= 1e-5 |want| + 1e-6 everywhere (ONNX Runtime's float32 against ours).
void expect_close(const at::Tensor& want, const at::Tensor& got, const std::string& what) {
  ASSERT_EQ(want.sizes(), got.sizes()) << what;
  const at::Tensor w = want.to(at::kDouble), g = got.to(at::kDouble);
  const double worst = ((w - g).abs() - 1e-5 * w.abs()).max().item<double>();
  EXPECT_LE(worst, 1e-6) << what << ": largest error " << (w - g).abs().max().item<double>();
}

// The manifest's --input and --state values of a model.
void cli_values(const nlohmann::json& m, std::vector<InputBinding>* inputs, StreamingOptions* streaming) {
  const auto& cli = m["cli"];
  for (size_t k = 0; k + 1 < cli.size(); k += 2) {
    const std::string flag = cli[k].get<std::string>(), value = cli[k + 1].get<std::string>();
    if (flag == "--input") inputs->push_back(InputBinding::parse(value));
    if (flag == "--state") streaming->state.push_back(StreamingOptions::parse_pair(value));
  }
}

}  // namespace

TEST(OnnxFiles, OutputsMatchOnnxRuntime) {
  ASSERT_TRUE(fs::exists(kFixtures / "manifest.json")) << "the committed fixture " << (kFixtures / "manifest.json") << " is missing";
  int compared = 0;
  const nlohmann::json all = manifest();
  for (const auto& m : all["models"]) {
    const std::string file = m["file"].get<std::string>();
    SCOPED_TRACE(file);
    std::vector<InputBinding> inputs;
    StreamingOptions streaming;
    cli_values(m, &inputs, &streaming);
    for (const auto& ref : m["references"]) {
      std::vector<at::Tensor> in, want;
      for (const auto& n : ref["inputs"]) in.push_back(read_tensor(n.get<std::string>()));
      for (const auto& n : ref["outputs"]) want.push_back(read_tensor(n.get<std::string>()));
      const bool whole_step = !streaming.active() || (ref["T"].is_string() && ref["T"] == "call");
      if (whole_step) {
        auto program = onnx_rt::OnnxProgram::load((kFixtures / file).string());
        const auto got = program->run_all(in);
        ASSERT_EQ(got.size(), want.size());
        for (size_t k = 0; k < got.size(); ++k) expect_close(want[k], got[k], fmt::format("{} output {}", ref["T"].dump(), k));
      } else {
        // Streamed: input_0 holds every chunk's frames, input_1 the initial state (zeros, as the
        // streaming program starts); output_0 the chunks' outputs side by side.
        onnx_rt::StreamingProgram program(onnx_rt::OnnxProgram::load((kFixtures / file).string()), streaming, inputs, 1);
        std::vector<at::Tensor> args;
        for (const auto& g : program.inputs()) {
          if (g.name == "x") args.push_back(in[0]);
          else {
            for (const auto& b : inputs)
              if (b.name == g.name && b.kind == InputBinding::Kind::kConst) args.push_back(at::scalar_tensor(static_cast<int64_t>(std::stoll(b.value)), at::kLong));
          }
        }
        ASSERT_EQ(args.size(), program.inputs().size());
        ASSERT_EQ(at::count_nonzero(in[1]).item<int64_t>(), 0) << "the streamed references start from zeros";
        const c10::IValue out = program.run(args);
        const at::Tensor y = out.isTensor() ? out.toTensor() : out.toGenericDict().at("y").toTensor();
        expect_close(want[0], y, fmt::format("streamed T={}", ref["T"].dump()));
      }
      ++compared;
    }
  }
  EXPECT_GE(compared, 35);  // two lengths per model, and one call per streaming step
}

TEST(OnnxFiles, VerdictsAndHorizonsMatchBruteForce) {
  AuditOptions o;
  auto results = run_audit_suite((kAudits / "onnx.json").string(), o, open_model_file);
  ASSERT_GE(results.size(), 16u);
  int leaky = 0, causal = 0;
  for (const auto& r : results) {
    EXPECT_TRUE(r.pass) << r.name << ": " << r.detail;
    (r.verdict == "leaky" ? leaky : causal) += 1;
    ASSERT_TRUE(r.result) << r.name << ": " << r.refusal;
    const auto facts = to_json(*r.result);
    EXPECT_EQ(facts.value("format", ""), "onnx") << r.name;
  }
  EXPECT_GE(leaky, 7);
  EXPECT_GE(causal, 8);
}

// --state-init: the streamed program started from a recorded state gives ONNX Runtime's output of
// one call from that state (the "call" reference: one chunk, a random state).
TEST(OnnxFiles, StateInitStartsTheStreamFromTheGivenState) {
  ASSERT_TRUE(fs::exists(kFixtures / "stream_gru.call.input_1.pb")) << "the committed fixture " << (kFixtures / "stream_gru.call.input_1.pb") << " is missing";
  StreamingOptions streaming;
  streaming.state.push_back(StreamingOptions::parse_pair("state=state_out"));
  streaming.state_init = (kFixtures / "stream_gru.call.input_1.pb").string();
  const std::vector<InputBinding> inputs{InputBinding::parse("x=features:4")};
  onnx_rt::StreamingProgram program(onnx_rt::OnnxProgram::load((kFixtures / "stream_gru.onnx").string()), streaming,
                                    inputs, 1);
  const at::Tensor x = read_tensor("stream_gru.call.input_0.pb");  // [B, 4, C]: one chunk
  const c10::IValue out = program.run({x});
  expect_close(read_tensor("stream_gru.call.output_0.pb"), out.toTensor(), "from --state-init");
  // From zeros the same chunk gives something else: the initial state is read.
  onnx_rt::StreamingProgram zeros(onnx_rt::OnnxProgram::load((kFixtures / "stream_gru.onnx").string()),
                                  StreamingOptions{{{"state", "state_out"}}, ""}, inputs, 1);
  EXPECT_FALSE(at::allclose(zeros.run({x}).toTensor(), out.toTensor()));
}

TEST(OnnxFiles, StreamingFlagsThatDoNotFitAreOneLine) {
  ASSERT_TRUE(fs::exists(kFixtures / "stream_gru.onnx")) << "the committed fixture " << (kFixtures / "stream_gru.onnx") << " is missing";
  const std::vector<InputBinding> inputs{InputBinding::parse("x=features:4")};
  auto open = [&](const StreamingOptions& s) {
    return open_model_file((kFixtures / "stream_gru.onnx").string(), inputs, 1, 1.0, s);
  };
  auto message = [&](const StreamingOptions& s) {
    try {
      open(s);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message({{{"hidden", "state_out"}}, ""}).find("the graph has no input 'hidden'"), std::string::npos);
  EXPECT_NE(message({{{"state", "h_next"}}, ""}).find("the graph has no output 'h_next'"), std::string::npos);
  EXPECT_NE(message({{{"state", "state_out"}}, "/nonexistent/init.pb"}).find("cannot be opened"), std::string::npos);
  EXPECT_THROW(StreamingOptions::parse_pair("state"), InputError);
  // Without --state the step is an ordinary graph whose state input needs its own --input.
  EXPECT_NE(message({}).find("state"), std::string::npos);
}
