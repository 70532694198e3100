#pragma once
// What the CPU can run, from cpuid (and xgetbv: the OS must save the wider registers), and which
// OpenBLAS kernel family that allows. Debian 12's OpenBLAS 0.3.21 (DYNAMIC_ARCH) does not know
// newer CPUs and falls back to an older family ("Prescott", SSE3 only, on a Xeon with AVX-512 and
// AMX, several times slower sgemm than with OPENBLAS_CORETYPE=Cooperlake). The CLI sets
// OPENBLAS_CORETYPE before OpenBLAS loads (cli/main.cpp re-executes once) when the reported core
// is below what the flags allow; a user's own OPENBLAS_CORETYPE always wins.
#include <optional>
#include <string>

namespace grassaudit {

struct CpuFeatures {
  std::string vendor;  // GenuineIntel, AuthenticAMD, ...
  bool sse3 = false, avx = false, avx2 = false, fma = false;
  bool avx512f = false, avx512cd = false, avx512bw = false, avx512dq = false, avx512vl = false;
  bool avx512_bf16 = false;
  bool amx_tile = false, amx_bf16 = false;
  // The OS saves the registers (XCR0): YMM for AVX/AVX2, opmask + ZMM for AVX-512, tiles for AMX.
  bool os_ymm = false, os_zmm = false, os_amx = false;
};

CpuFeatures detect_cpu_features();

// The best OpenBLAS kernel family whose instructions the CPU has and the OS enables:
// "Cooperlake" (AVX-512 F/CD/BW/DQ/VL + AVX512_BF16), "SkylakeX" (AVX-512 without BF16),
// "Haswell" (AVX2 + FMA), "Sandybridge" (AVX), "Prescott" (SSE3), else "" (unknown).
std::string best_openblas_core(const CpuFeatures& f);

// The OPENBLAS_CORETYPE to set, or nullopt to leave OpenBLAS's own choice: only when `reported`
// (openblas_get_corename()) is a family below best_openblas_core(f) -- never a kernel the CPU
// lacks -- and never over a vendor-specific target OpenBLAS chose (Zen, ...) that the ranking does
// not know. Pure: unit-tested on flag sets.
std::optional<std::string> openblas_core_upgrade(const std::string& reported, const CpuFeatures& f);

// The units a GEMM can run on, OS-enabled, for banners and bench JSON ("cpu_units"):
// "AVX2+FMA, AVX-512, AVX512_BF16, no AMX", "..., AMX-BF16". Pure: unit-tested on flag sets.
std::string cpu_matrix_units(const CpuFeatures& f);

// Native bf16 matrix arithmetic (AMX-BF16 or AVX512_BF16, OS-enabled): what --precision bf16 on
// CPU needs. `why` gets one line when not.
bool cpu_has_native_bf16(const CpuFeatures& f, std::string* why);

// The hand-written AVX-512 kernels (bf16 loss rows, dropout, fused AdamW) are compiled with this
// target and run where cpu_runs_avx512_kernels(): AVX-512 F/BW/VL/DQ, OS-enabled. Detected once.
#define GRASSAUDIT_AVX512_KERNEL __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq")))
bool cpu_runs_avx512_kernels();

}  // namespace grassaudit
