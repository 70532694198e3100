#include "runtime/runtime.h"

#include "runtime/cpu_features.h"
#include "runtime/torch_compat.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/autocast_mode.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <dlfcn.h>
#include <fmt/format.h>
#include <torch/nn/module.h>
#include <torch/version.h>

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <cstdio>
#include <cstdlib>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "util/error.h"

namespace grassaudit {

namespace {
// OpenBLAS (pthread build) keeps its own thread pool, sized to all cores by default and NOT
// resized by at::set_num_threads (LibTorch only forwards the count to OpenMP and MKL). Without
// this, "--threads 1" still ran every GEMM on two threads, and "--threads 2" ran two OpenBLAS
// workers beside a spinning OpenMP worker on a 2-core machine. Looked up at run time because the
// BLAS is whatever Debian's libblas.so.3 alternative points to.
using SetThreadsFn = void (*)(int);
using GetThreadsFn = int (*)();
SetThreadsFn openblas_setter() {
  return reinterpret_cast<SetThreadsFn>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
}
}  // namespace

int blas_threads() {
  auto get = reinterpret_cast<GetThreadsFn>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  return get ? get() : 0;
}

int configure_threads(int threads) {
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  at::set_num_threads(threads);
  // LibTorch allows this once per process (and not after parallel work has started).
  static const bool interop_set = [] {
    at::set_num_interop_threads(1);
    return true;
  }();
  (void)interop_set;
  if (auto set = openblas_setter()) set(threads);
  return at::get_num_threads();
}

namespace {
// Path of the first mapped library whose file name contains one of the needles.
std::string mapped_library(const std::vector<std::string>& needles) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    auto slash = line.find('/');
    if (slash == std::string::npos) continue;
    std::string path = line.substr(slash);
    std::string base = path.substr(path.rfind('/') + 1);
    for (const auto& n : needles)
      if (base.find(n) != std::string::npos) return path;
  }
  return {};
}
}  // namespace

std::string blas_in_use() {
  // Debian routes libblas.so.3 through alternatives; the mapped file tells which one won.
  std::string openblas = mapped_library({"libopenblas"});
  if (!openblas.empty()) return "OpenBLAS (" + openblas + ")";
  std::string blas = mapped_library({"libblas.so"});
  if (!blas.empty()) {
    if (blas.find("openblas") != std::string::npos) return "OpenBLAS (" + blas + ")";
    if (blas.find("blis") != std::string::npos) return "BLIS (" + blas + ")";
    if (blas.find("atlas") != std::string::npos) return "ATLAS (" + blas + ")";
    return "reference BLAS (" + blas + ")";
  }
  std::string mkl = mapped_library({"libmkl"});
  if (!mkl.empty()) return "MKL (" + mkl + ")";
  return "unknown BLAS (no BLAS library mapped yet)";
}

bool blas_is_reference() { return blas_in_use().rfind("reference", 0) == 0; }

std::string blas_core() {
  using CoreNameFn = char* (*)();
  auto get = reinterpret_cast<CoreNameFn>(dlsym(RTLD_DEFAULT, "openblas_get_corename"));
  const char* name = get ? get() : nullptr;
  return name ? std::string(name) : std::string();
}

std::string blas_core_source() {
  if (const char* from = std::getenv("GRASSAUDIT_OPENBLAS_CORE_FROM"); from && *from)
    return fmt::format("grassaudit (over OpenBLAS's own {})", from);
  if (const char* user = std::getenv("OPENBLAS_CORETYPE"); user && *user) return "OPENBLAS_CORETYPE (user)";
  return "openblas";
}

double measure_gemm_gflops(int n, int reps, at::ScalarType dtype) {
  auto a = at::randn({n, n}).to(dtype), b = at::randn({n, n}).to(dtype);
  at::mm(a, b);  // warm-up, and maps the BLAS library
  std::vector<double> secs;
  for (int i = 0; i < reps; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    auto c = at::mm(a, b);
    secs.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(secs.begin(), secs.end());
  return 2.0 * n * n * n / secs[secs.size() / 2] / 1e9;
}

std::string runtime_banner() {
  // A GEMM call first, so the BLAS library is mapped and can be named.
  double gflops = measure_gemm_gflops(256, 3);
  std::ostringstream out;
  const int bt = blas_threads();
  const std::string core = blas_core();
  out << fmt::format("threads: {} (intra-op), BLAS: {} ({} threads{}), sgemm 256: {:.1f} GFLOP/s\n",
                     at::get_num_threads(), blas_in_use(), bt > 0 ? std::to_string(bt) : "own",
                     core.empty() ? "" : fmt::format(", core {} chosen by {}", core, blas_core_source()), gflops);
  out << fmt::format("CPU: {}; matrix units: {}\n", machine_description(), cpu_matrix_units(detect_cpu_features()));
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  const char* spin = std::getenv("GOMP_SPINCOUNT");
  const char* blas_timeout = std::getenv("OPENBLAS_THREAD_TIMEOUT");
  out << fmt::format("OpenMP waiting: OMP_WAIT_POLICY={}{}; OpenBLAS idle workers: OPENBLAS_THREAD_TIMEOUT={}\n",
                     policy ? policy : "(unset: spinning)", spin ? std::string(", GOMP_SPINCOUNT=") + spin : "",
                     blas_timeout ? blas_timeout : "(unset: yielding 2^28 cycles)");
  std::string info = at::get_parallel_info();
  std::istringstream lines(info);
  std::string line;
  while (std::getline(lines, line))
    if (!line.empty()) out << "  " << line << "\n";
  if (!core.empty() && blas_core_source() == "OPENBLAS_CORETYPE (user)")
    if (auto better = openblas_core_upgrade(core, detect_cpu_features()))
      out << fmt::format("note: OPENBLAS_CORETYPE={} is set in the environment (kept: yours wins); this CPU runs {} "
                         "kernels, which grassaudit would choose without it\n",
                         core, *better);
  if (blas_is_reference())
    out << "WARNING: LibTorch is using the reference BLAS (about 30x slower GEMM); "
           "install libopenblas0-pthread (apt-get install libopenblas0-pthread)\n";
  return out.str();
}

std::string machine_description() {
  std::ifstream cpu("/proc/cpuinfo");
  std::string line, model = "unknown CPU";
  while (std::getline(cpu, line)) {
    if (line.rfind("model name", 0) == 0) {
      model = line.substr(line.find(':') + 2);
      break;
    }
  }
  return fmt::format("{}, {} cores", model, std::thread::hardware_concurrency());
}

namespace {

// The first line `command` prints, "" when it cannot run (no shell involved beyond popen's).
std::string first_output_line(const char* command) {
  FILE* f = ::popen(command, "r");
  if (!f) return "";
  char buf[512] = {0};
  std::string line = std::fgets(buf, sizeof buf, f) ? std::string(buf) : std::string();
  ::pclose(f);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r' || line.back() == ' ')) line.pop_back();
  return line;
}

// The lines of LibTorch's build configuration that name a CUDA or cuDNN version.
std::string cuda_versions(const std::string& config) {
  std::istringstream in(config);
  std::string line, out;
  while (std::getline(in, line)) {
    const auto b = line.find_first_not_of(" -");
    if (b == std::string::npos) continue;
    const std::string item = line.substr(b);
    if (item.rfind("CUDA Runtime", 0) == 0 || item.rfind("CuDNN", 0) == 0 || item.rfind("cuDNN", 0) == 0)
      out += (out.empty() ? "" : ", ") + item;
  }
  return out;
}

}  // namespace

std::string gpu_description() {
  if (!at::hasCUDA()) return "";
  // nvidia-smi names the device and its memory without CUDA headers in this build.
  std::string name = first_output_line("nvidia-smi --query-gpu=name,memory.total --format=csv,noheader -i 0 2>/dev/null");
  if (name.empty()) name = "CUDA device (nvidia-smi not found)";
  const std::string versions = cuda_versions(at::detail::getCUDAHooks().showConfig());
  const auto& ctx = at::globalContext();
  return fmt::format("{}; {}; TF32 matmul {}, cuDNN {}; BLAS cuBLAS", name,
                     versions.empty() ? std::string("CUDA and cuDNN versions not reported") : versions,
                     ctx.allowTF32CuBLAS() ? "on" : "off", ctx.allowTF32CuDNN() ? "on" : "off");
}

// ---- CUDA math ----

CudaPrecision parse_cuda_precision(const std::string& name) {
  if (name == "fp32") return CudaPrecision::kFp32;
  if (name == "tf32") return CudaPrecision::kTf32;
  if (name == "bf16") return CudaPrecision::kBf16;
  throw InputError(fmt::format("--precision must be fp32, tf32 or bf16, got '{}'", name));
}

const char* cuda_precision_name(CudaPrecision precision) {
  switch (precision) {
    case CudaPrecision::kFp32: return "fp32";
    case CudaPrecision::kTf32: return "tf32";
    case CudaPrecision::kBf16: return "bf16";
  }
  return "fp32";
}

CudaPrecision resolve_cuda_precision(const std::optional<std::string>& flag, const std::string& device) {
  const bool cuda = device == "cuda";
  if (!flag) return cuda ? CudaPrecision::kTf32 : CudaPrecision::kFp32;
  const CudaPrecision p = parse_cuda_precision(*flag);
  if (!cuda && p == CudaPrecision::kBf16) {
    std::string why;
    if (!cpu_has_native_bf16(detect_cpu_features(), &why)) throw InputError("--precision bf16 on CPU: " + why);
    return p;
  }
  if (!cuda && p != CudaPrecision::kFp32)
    throw InputError(fmt::format("--precision {} needs --device cuda (TF32 is a CUDA format)", *flag));
  return p;
}

namespace {
// The precision configure_cuda_math set (nullopt: never called, a CPU run).
std::optional<CudaPrecision>& configured_precision() {
  static std::optional<CudaPrecision> p;
  return p;
}

// The TF32 switches alone. setAllowTF32CuBLAS is the one call that keeps LibTorch's legacy
// matmul-precision field and (from 2.9 on) its per-backend fp32_precision in step; the getters
// are never called (from 2.9 on they warn that the API is deprecated).
void set_tf32(bool on) {
  auto& ctx = at::globalContext();
  ctx.setAllowTF32CuBLAS(on);
  ctx.setAllowTF32CuDNN(on);
}
}  // namespace

void configure_cuda_math(CudaPrecision precision) {
  set_tf32(precision != CudaPrecision::kFp32);
  auto& ctx = at::globalContext();
  ctx.setDeterministicCuDNN(true);
  ctx.setBenchmarkCuDNN(false);
  setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", /*overwrite=*/0);
  configured_precision() = precision;
}

std::string cuda_math_description(CudaPrecision precision) {
  const char* what = "IEEE float32 GEMMs (TF32 off)";
  if (precision == CudaPrecision::kTf32) what = "training GEMMs in TF32";
  if (precision == CudaPrecision::kBf16) what = "training forward and loss under bf16 autocast, other GEMMs in TF32";
  const char* ws = std::getenv("CUBLAS_WORKSPACE_CONFIG");
  return fmt::format("CUDA math: {} ({}); evaluation in IEEE float32; the audit gate on an exact CPU copy "
                     "(float32 probes, float64 re-run); cuDNN deterministic, benchmark off; "
                     "CUBLAS_WORKSPACE_CONFIG={}",
                     cuda_precision_name(precision), what, ws ? ws : "(unset)");
}

ScopedCudaMath::ScopedCudaMath(CudaPrecision precision) : active_(configured_precision().has_value()) {
  if (active_) set_tf32(precision != CudaPrecision::kFp32);
}

ScopedCudaMath::~ScopedCudaMath() {
  if (active_) set_tf32(*configured_precision() != CudaPrecision::kFp32);
}

// GRASSAUDIT_AUTOCAST_BY_DEVICE (runtime/torch_compat.h): LibTorch 2.4's device-type autocast calls.

namespace {
void check_autocast_device(c10::DeviceType device) {
  if (device != c10::DeviceType::CPU && device != c10::DeviceType::CUDA)
    throw std::invalid_argument("AutocastScope: only CPU and CUDA autocast are supported");
}

bool autocast_enabled(c10::DeviceType device) {
#if GRASSAUDIT_AUTOCAST_BY_DEVICE
  return at::autocast::is_autocast_enabled(device);
#else
  return device == c10::DeviceType::CUDA ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled();
#endif
}

at::ScalarType autocast_dtype(c10::DeviceType device) {
#if GRASSAUDIT_AUTOCAST_BY_DEVICE
  return at::autocast::get_autocast_dtype(device);
#else
  return device == c10::DeviceType::CUDA ? at::autocast::get_autocast_gpu_dtype()
                                         : at::autocast::get_autocast_cpu_dtype();
#endif
}

void set_autocast(c10::DeviceType device, bool enabled, at::ScalarType dtype) {
#if GRASSAUDIT_AUTOCAST_BY_DEVICE
  at::autocast::set_autocast_dtype(device, dtype);
  at::autocast::set_autocast_enabled(device, enabled);
#else
  if (device == c10::DeviceType::CUDA) {
    at::autocast::set_autocast_gpu_dtype(dtype);
    at::autocast::set_enabled(enabled);
  } else {
    at::autocast::set_autocast_cpu_dtype(dtype);
    at::autocast::set_cpu_enabled(enabled);
  }
#endif
}
}  // namespace

bool cpu_bf16_autocast() {
  return autocast_enabled(c10::DeviceType::CPU) && autocast_dtype(c10::DeviceType::CPU) == at::kBFloat16;
}

AutocastScope::AutocastScope(c10::DeviceType device, at::ScalarType dtype)
    : device_((check_autocast_device(device), device)),
      prev_enabled_(autocast_enabled(device)),
      prev_dtype_(autocast_dtype(device)) {
  set_autocast(device_, true, dtype);
  at::autocast::increment_nesting();
}

AutocastScope::~AutocastScope() {
  // As torch.autocast.__exit__: the cache of casted weights lives for the outermost scope only.
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  set_autocast(device_, prev_enabled_, prev_dtype_);
}

void warm_up_training_step(torch::nn::Module& model, const std::function<at::Tensor()>& loss) {
  const bool was_training = model.is_training();
  model.eval();
  try {
    loss().backward();
  } catch (...) {
    model.train(was_training);
    throw;
  }
  for (auto& p : model.parameters()) p.mutable_grad() = at::Tensor();
  model.train(was_training);
}

}  // namespace grassaudit
