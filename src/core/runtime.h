#pragma once
// Process-wide runtime settings: thread count, BLAS identification, device choice.
#include <string>

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

// Measured single-precision GEMM rate (n x n x n, median of a few reps), in GFLOP/s.
double measure_gemm_gflops(int n = 512, int reps = 5);

// One paragraph for the start of long commands: threads, at::get_parallel_info(), BLAS, and a
// warning naming the package to install when the BLAS is the slow reference one.
std::string runtime_banner();

// A short machine description for benchmark artifacts: CPU model, cores.
std::string machine_description();

}  // namespace grassaudit
