#pragma once
// Process-wide runtime settings: thread count, BLAS identification, device choice, CUDA math.
#include <functional>
#include <optional>
#include <string>

#include <c10/core/DeviceType.h>
#include <c10/core/ScalarType.h>

#include "util/non_copyable.h"

namespace at {
class Tensor;
}
namespace torch::nn {
class Module;
}

namespace grassaudit {

// Sets LibTorch's intra-op threads and, when the BLAS is OpenBLAS, its thread pool to the same
// count. threads <= 0 means "all cores". Returns the count in use.
int configure_threads(int threads);
// OpenBLAS's thread count (0 when the BLAS is not OpenBLAS).
int blas_threads();

// The BLAS library actually mapped into this process (from /proc/self/maps), e.g.
// "OpenBLAS (libopenblas0-pthread: /usr/lib/.../libblas.so.3)" or "reference BLAS (...)".
std::string blas_in_use();
bool blas_is_reference();
// OpenBLAS's kernel family in use (openblas_get_corename(): "Haswell", "Cooperlake", ...), "" when
// the BLAS is not OpenBLAS; and how it was chosen: "openblas" (its own detection), "grassaudit
// (over OpenBLAS's own X)" (cli/main.cpp, runtime/cpu_features.h) or "OPENBLAS_CORETYPE (user)".
std::string blas_core();
std::string blas_core_source();

// Measured single-precision GEMM rate (n x n x n, median of a few reps), in GFLOP/s.
// dtype kBFloat16: the bf16 rate (oneDNN where the CPU has native bf16; emulated, slow, elsewhere).
double measure_gemm_gflops(int n = 512, int reps = 5, at::ScalarType dtype = at::kFloat);

// One paragraph for the start of long commands: threads, at::get_parallel_info(), BLAS, and a
// warning naming the package to install when the BLAS is the slow reference one.
std::string runtime_banner();

// A short machine description for benchmark artifacts: CPU model, cores.
std::string machine_description();

// The GPU a CUDA run uses, for provenance: "NVIDIA H200, 143771 MiB; CUDA Runtime 12.4, CuDNN
// 90100; TF32 matmul on, cuDNN on; BLAS cuBLAS" (nvidia-smi for the name and memory, LibTorch's
// build configuration for the versions, the TF32 switches as set now). "" without CUDA.
std::string gpu_description();

// ---- CUDA math (train --precision) ----
// How a CUDA training step does its float32 math:
//   fp32  IEEE float32 everywhere (cuBLAS/cuDNN TF32 off);
//   tf32  float32 tensors, but cuBLAS/cuDNN GEMMs with TF32 inputs (10-bit mantissa, float32
//         accumulation): on Hopper about 7x the plain float32 rate (dense, vendor figures);
//   bf16  tf32, plus the forward and the loss under autocast to bfloat16 (AutocastScope).
// CPU math is never changed: the audit gate's exact CPU copy, its float32 probes and its float64
// re-run are unaffected by any of these (TF32 applies to float32 CUDA GEMMs only).
enum class CudaPrecision { kFp32, kTf32, kBf16 };

// "fp32" | "tf32" | "bf16"; anything else: InputError "--precision must be fp32, tf32 or bf16, got 'x'".
CudaPrecision parse_cuda_precision(const std::string& name);
const char* cuda_precision_name(CudaPrecision precision);
// The --precision flag for a run on `device` ("cpu" | "cuda"): not given (nullopt) means tf32 on
// CUDA, fp32 on CPU; on CPU anything but fp32 is an InputError (nothing would change, so a silent
// accept would record a precision the run never had).
CudaPrecision resolve_cuda_precision(const std::optional<std::string>& flag, const std::string& device);

// Sets the process-wide CUDA math for `precision`: TF32 for cuBLAS and cuDNN (on for tf32/bf16),
// cuDNN deterministic with benchmarking off (cheap: grassaudit runs no convolutions), and
// CUBLAS_WORKSPACE_CONFIG=:4096:8 unless already set (cuBLAS's documented condition for
// reproducible results across streams; read when the first cuBLAS handle is made, so call this
// before any CUDA GEMM). Call it for CUDA runs only; CPU runs never touch these flags.
void configure_cuda_math(CudaPrecision precision);
// One line for logs: "CUDA math: tf32 (...)".
std::string cuda_math_description(CudaPrecision precision);

// Within its scope, CUDA float32 GEMMs run in `precision`'s TF32 setting; at exit the setting of
// configure_cuda_math comes back. A no-op when configure_cuda_math was never called (CPU runs).
// Evaluation uses ScopedCudaMath(kFp32): every reported perplexity comes from IEEE float32 math.
class ScopedCudaMath : NonCopyable {
 public:
  explicit ScopedCudaMath(CudaPrecision precision);
  ~ScopedCudaMath();

 private:
  bool active_ = false;
};

// torch.autocast(device, dtype) for one scope: ops on the autocast lists run in `dtype`
// (matmuls, linear) or float32 (softmax, layer norm, losses); the cast cache is cleared when the
// outermost scope ends. Backward must run outside it (as PyTorch prescribes); the parameters and
// their gradients stay float32. The trainer uses it on CUDA only; tests use it on CPU, whose
// autocast works the same way with its own op lists.
// True inside an AutocastScope(CPU, bf16) (train --precision bf16 on a CPU with native bf16):
// the code paths LibTorch's autocast cannot see (the fused head's out= GEMMs, the Grassmann
// fast path's own loops) read it to run their matrix products in bf16 and their loops in float32.
bool cpu_bf16_autocast();

class AutocastScope : NonCopyable {
 public:
  AutocastScope(c10::DeviceType device, at::ScalarType dtype);
  ~AutocastScope();

 private:
  c10::DeviceType device_;
  bool prev_enabled_;
  at::ScalarType prev_dtype_;
};

// Pays a device's one-time costs (on CUDA: cuBLAS handles, lazy kernel loading, the caching
// allocator's first blocks, seconds in all) before a training loop starts its clock, so the step
// time it projects after a few steps is the steady one. Runs loss() and its backward once with
// `model` in eval mode (no dropout, so no random number is drawn), then drops every gradient and
// restores the training mode: weights, optimizer state and RNG state are as before.
void warm_up_training_step(torch::nn::Module& model, const std::function<at::Tensor()>& loss);

}  // namespace grassaudit
