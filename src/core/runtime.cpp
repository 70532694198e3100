#include "core/runtime.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

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

double measure_gemm_gflops(int n, int reps) {
  auto a = at::randn({n, n}), b = at::randn({n, n});
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
  out << fmt::format("threads: {} (intra-op), BLAS: {} ({} threads), sgemm 256: {:.1f} GFLOP/s\n",
                     at::get_num_threads(), blas_in_use(), bt > 0 ? std::to_string(bt) : "own", gflops);
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  const char* spin = std::getenv("GOMP_SPINCOUNT");
  out << fmt::format("OpenMP waiting: OMP_WAIT_POLICY={}{}\n", policy ? policy : "(unset: spinning)",
                     spin ? std::string(", GOMP_SPINCOUNT=") + spin : "");
  std::string info = at::get_parallel_info();
  std::istringstream lines(info);
  std::string line;
  while (std::getline(lines, line))
    if (!line.empty()) out << "  " << line << "\n";
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

}  // namespace grassaudit
