// train --precision and the CUDA math settings behind it (runtime/runtime.h), as far as a CPU-only
// LibTorch can check them: the flag's parsing and its refusal on CPU, the TF32 switches and their
// scoped override, bf16 autocast through the real model (on CPU's autocast: the CUDA one needs a
// GPU), the warm-up step's promise to change nothing, and "precision" in the provenance.
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

#include "core/language_model.h"
#include "runtime/cpu_features.h"
#include "core/lm_loss.h"
#include "runtime/runtime.h"
#include "train/train_test_support.h"
#include "util/error.h"

namespace grassaudit {
namespace {

using testing::expect_usage_error;
using testing::read_json;
using testing::run_grassaudit;

TEST(CudaPrecisionFlag, DefaultsDependOnTheDevice) {
  EXPECT_EQ(resolve_cuda_precision(std::nullopt, "cuda"), CudaPrecision::kTf32);
  EXPECT_EQ(resolve_cuda_precision(std::nullopt, "cpu"), CudaPrecision::kFp32);
}

TEST(CudaPrecisionFlag, EveryNameRoundTripsOnCuda) {
  for (auto p : {CudaPrecision::kFp32, CudaPrecision::kTf32, CudaPrecision::kBf16}) {
    EXPECT_EQ(parse_cuda_precision(cuda_precision_name(p)), p);
    EXPECT_EQ(resolve_cuda_precision(std::string(cuda_precision_name(p)), "cuda"), p);
  }
}

// CPU: fp32 always, bf16 exactly where the CPU has native bf16 (AMX-BF16 or AVX512_BF16);
// tf32 never.
TEST(CudaPrecisionFlag, CpuAcceptsFp32AndNativeBf16) {
  EXPECT_EQ(resolve_cuda_precision(std::string("fp32"), "cpu"), CudaPrecision::kFp32);
  try {
    resolve_cuda_precision(std::string("tf32"), "cpu");
    ADD_FAILURE() << "tf32 accepted on cpu";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "--precision tf32 needs --device cuda (TF32 is a CUDA format)");
  }
  std::string why;
  if (cpu_has_native_bf16(detect_cpu_features(), &why)) {
    EXPECT_EQ(resolve_cuda_precision(std::string("bf16"), "cpu"), CudaPrecision::kBf16);
  } else {
    try {
      resolve_cuda_precision(std::string("bf16"), "cpu");
      ADD_FAILURE() << "bf16 accepted on a cpu without native bf16";
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()), "--precision bf16 on CPU: " + why);
    }
  }
}

TEST(CudaPrecisionFlag, UnknownNamesAreInputErrors) {
  for (const std::string bad : {"", "fp16", "FP32", "bfloat16", "tf32 "}) {
    EXPECT_THROW(parse_cuda_precision(bad), InputError) << "'" << bad << "'";
    EXPECT_THROW(resolve_cuda_precision(bad, "cuda"), InputError) << "'" << bad << "'";
  }
}

// The switches are process-wide: this test sets them, checks them and leaves fp32 behind.
TEST(CudaMath, ConfigureSetsTf32AndDeterminismAndTheScopeRestoresIt) {
  auto& ctx = at::globalContext();
  configure_cuda_math(CudaPrecision::kTf32);
  EXPECT_TRUE(ctx.allowTF32CuBLAS());
  EXPECT_TRUE(ctx.allowTF32CuDNN());
  EXPECT_TRUE(ctx.deterministicCuDNN());
  EXPECT_FALSE(ctx.benchmarkCuDNN());
  ASSERT_NE(std::getenv("CUBLAS_WORKSPACE_CONFIG"), nullptr);
  {
    const ScopedCudaMath ieee(CudaPrecision::kFp32);
    EXPECT_FALSE(ctx.allowTF32CuBLAS());
    EXPECT_FALSE(ctx.allowTF32CuDNN());
  }
  EXPECT_TRUE(ctx.allowTF32CuBLAS());  // back to what configure_cuda_math set
  configure_cuda_math(CudaPrecision::kBf16);
  EXPECT_TRUE(ctx.allowTF32CuBLAS());
  configure_cuda_math(CudaPrecision::kFp32);
  EXPECT_FALSE(ctx.allowTF32CuBLAS());
  EXPECT_FALSE(ctx.allowTF32CuDNN());
  EXPECT_NE(cuda_math_description(CudaPrecision::kBf16).find("bf16 autocast"), std::string::npos);
}

TEST(CudaMath, CpuFloat32AndFloat64MathIsBitIdenticalUnderTf32) {
  // The gate audits an exact CPU copy in float32 and float64: the CUDA switches must not reach it.
  at::manual_seed(3);
  const auto a = at::randn({67, 129}), b = at::randn({129, 71});
  const auto a64 = a.to(at::kDouble), b64 = b.to(at::kDouble);
  configure_cuda_math(CudaPrecision::kFp32);
  const auto ref32 = at::mm(a, b), ref64 = at::mm(a64, b64);
  configure_cuda_math(CudaPrecision::kTf32);
  EXPECT_TRUE(at::equal(at::mm(a, b), ref32));
  EXPECT_TRUE(at::equal(at::mm(a64, b64), ref64));
  configure_cuda_math(CudaPrecision::kFp32);
}

TEST(Autocast, ScopeCastsMatmulsAndRestoresOnExit) {
  const auto a = at::randn({4, 8}), b = at::randn({8, 3});
  ASSERT_EQ(at::mm(a, b).scalar_type(), at::kFloat);
  {
    const AutocastScope outer(c10::DeviceType::CPU, at::kBFloat16);
    EXPECT_EQ(at::mm(a, b).scalar_type(), at::kBFloat16);
    {
      const AutocastScope inner(c10::DeviceType::CPU, at::kBFloat16);
      EXPECT_EQ(at::mm(a, b).scalar_type(), at::kBFloat16);
    }
    EXPECT_EQ(at::mm(a, b).scalar_type(), at::kBFloat16);  // the inner exit left the outer scope on
  }
  EXPECT_EQ(at::mm(a, b).scalar_type(), at::kFloat);
}

TEST(Autocast, CudaScopeOnACpuBuildLeavesCpuMathAlone) {
  const auto a = at::randn({4, 8}), b = at::randn({8, 3});
  const AutocastScope cuda(c10::DeviceType::CUDA, at::kBFloat16);
  EXPECT_EQ(at::mm(a, b).scalar_type(), at::kFloat);
}

ModelConfig small_model(const std::string& mixer) {
  ModelConfig c;
  c.mixer = mixer;
  c.vocab_size = 50;
  c.d_model = 16;
  c.rank = 4;
  c.heads = 2;
  c.layers = 2;
  c.max_len = 12;
  c.d_ff = 24;
  c.offsets = {1, 2};
  c.dropout = 0;
  return c;
}

// --precision bf16 wraps exactly this (trainer.cpp LmTask::loss_of): forward and loss under
// autocast, backward outside. On CPU autocast the model's GEMMs run in bf16 as they would on
// CUDA; a dtype clash in a mixer or in the fused head would throw here. The Grassmann mixers run
// their literal path on CUDA (their fast path's fused loops are CPU code, float32/float64 only),
// so that is the path checked here: literal-past and literal-future.
TEST(Autocast, Bf16TrainingStepThroughTheModelKeepsFloat32GradientsAndACloseLoss) {
  for (const std::string mixer : {"literal-past", "literal-future", "attention"}) {
    for (const LossImpl impl : {LossImpl::kFused, LossImpl::kMaterialized}) {
      SCOPED_TRACE(mixer + " " + loss_impl_name(impl));
      at::manual_seed(11);
      LanguageModel model(small_model(mixer));
      const auto ids = at::randint(0, 50, {3, 12}, at::kLong);
      const auto targets = at::randint(0, 50, {3, 12}, at::kLong);
      const double fp32 = lm_loss(model, ids, targets, impl).item<double>();
      model->zero_grad(/*set_to_none=*/false);
      at::Tensor loss;
      {
        const AutocastScope autocast(c10::DeviceType::CPU, at::kBFloat16);
        loss = lm_loss(model, ids, targets, impl);
      }
      loss.backward();
      const double bf16 = loss.item<double>();
      EXPECT_TRUE(std::isfinite(bf16));
      // bf16 keeps 8 mantissa bits: the loss (~log 50 = 3.9) moves by far less than 2%.
      EXPECT_NEAR(bf16, fp32, 0.02 * fp32);
      EXPECT_NE(bf16, fp32);  // the GEMMs did run in bf16
      for (const auto& p : model->named_parameters()) {
        ASSERT_TRUE(p.value().grad().defined()) << p.key();
        EXPECT_EQ(p.value().scalar_type(), at::kFloat) << p.key();
        EXPECT_EQ(p.value().grad().scalar_type(), at::kFloat) << p.key();
        EXPECT_TRUE(p.value().grad().isfinite().all().item<bool>()) << p.key();
      }
    }
  }
}

TEST(WarmUp, ChangesNeitherWeightsNorGradientsNorRngNorMode) {
  at::manual_seed(5);
  ModelConfig cfg = small_model("past");
  cfg.dropout = 0.1;  // dropout would draw random numbers in training mode
  LanguageModel model(cfg);
  model->train();
  std::vector<at::Tensor> before;
  for (const auto& p : model->parameters()) before.push_back(p.detach().clone());
  const auto ids = at::randint(0, 50, {2, 12}, at::kLong), targets = at::randint(0, 50, {2, 12}, at::kLong);
  const at::Tensor rng_before = at::detail::getDefaultCPUGenerator().get_state();
  bool ran_in_eval_mode = false;
  warm_up_training_step(*model, [&] {
    ran_in_eval_mode = !model->is_training();
    return lm_loss(model, ids, targets, LossImpl::kFused);
  });
  EXPECT_TRUE(ran_in_eval_mode);
  EXPECT_TRUE(model->is_training());
  EXPECT_TRUE(at::equal(at::detail::getDefaultCPUGenerator().get_state(), rng_before));
  size_t i = 0;
  for (const auto& p : model->parameters()) {
    EXPECT_TRUE(at::equal(p, before[i++]));
    EXPECT_FALSE(p.grad().defined());
  }
}

TEST(WarmUp, AFailingLossRestoresTheModeAndRethrows) {
  LanguageModel model(small_model("past"));
  model->train();
  EXPECT_THROW(warm_up_training_step(*model, []() -> at::Tensor { throw std::runtime_error("boom"); }),
               std::runtime_error);
  EXPECT_TRUE(model->is_training());
}

TEST(TrainPrecisionCli, NonFp32OnCpuIsAOneLineUsageError) {
  GRASSAUDIT_REQUIRE_BINARY();
  testing::TempDir t;
  if (!cpu_has_native_bf16(detect_cpu_features(), nullptr))
    expect_usage_error({"train", "--mixer", "past", "--preset", "tiny", "--out", t.file("run"), "--precision",
                        "bf16", "--device", "cpu"},
                       "--precision bf16 on CPU: this CPU has no native bf16");
  expect_usage_error({"train", "--mixer", "past", "--preset", "tiny", "--out", t.file("run"), "--precision", "tf32"},
                     "--precision tf32 needs --device cuda");
  expect_usage_error({"train", "--mixer", "past", "--preset", "tiny", "--out", t.file("run"), "--precision", "fp16"},
                     "--precision must be fp32, tf32 or bf16, got 'fp16'");
  EXPECT_FALSE(std::filesystem::exists(t.file("run") + "/config.json"));  // refused before any output
}

// On a CPU with native bf16: a bf16 run trains, says so, records it, and its losses stay near the
// fp32 run's (same seed; the gate and the evaluation are float32/float64 either way).
TEST(TrainPrecisionCli, Bf16OnACpuWithNativeBf16) {
  GRASSAUDIT_REQUIRE_BINARY();
  GRASSAUDIT_REQUIRE_WIKITEXT(data);
  if (!cpu_has_native_bf16(detect_cpu_features(), nullptr)) GTEST_SKIP() << "this CPU has no native bf16";
  testing::TempDir t;
  double loss[2] = {0, 0};
  for (int k = 0; k < 2; ++k) {
    const std::string out = t.file(k ? "bf16" : "fp32");
    auto r = run_grassaudit({"train", "--mixer", "past", "--preset", "tiny", "--max-tokens", "128", "--out", out,
                             "--threads", "1", "--precision", k ? "bf16" : "fp32"});
    ASSERT_EQ(r.status, 0) << r.err;
    const auto s = read_json(out + "/summary.json");
    EXPECT_EQ(s.at("provenance").at("precision"), k ? "bf16" : "fp32");
    if (k) EXPECT_NE(r.err.find("CPU math: bf16 (native)"), std::string::npos) << r.err;
    loss[k] = s.at("audit").at("verdict") == "causal" ? s.at("test_ppl").get<double>() : 0.0;
  }
  ASSERT_GT(loss[0], 0);
  EXPECT_LT(std::abs(loss[1] - loss[0]) / loss[0], 0.05) << loss[0] << " vs " << loss[1];
}

TEST(TrainPrecisionCli, ProvenanceRecordsFp32OnCpu) {
  GRASSAUDIT_REQUIRE_BINARY();
  GRASSAUDIT_REQUIRE_WIKITEXT(data);
  testing::TempDir t;
  for (const bool explicit_flag : {false, true}) {
    const std::string out = t.file(explicit_flag ? "explicit" : "default");
    std::vector<std::string> args{"train", "--mixer", "past", "--preset", "tiny", "--max-tokens", "128",
                                  "--out", out, "--threads", "1"};
    if (explicit_flag) args.insert(args.end(), {"--precision", "fp32"});
    auto r = run_grassaudit(args);
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(read_json(out + "/summary.json").at("provenance").at("precision"), "fp32");
    EXPECT_EQ(r.err.find("CUDA math"), std::string::npos) << r.err;  // nothing CUDA is set up on CPU
  }
}

}  // namespace
}  // namespace grassaudit
