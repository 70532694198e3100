#include "runtime/cpu_features.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define GRASSAUDIT_X86 1
#endif

namespace grassaudit {

CpuFeatures detect_cpu_features() {
  CpuFeatures f;
#ifdef GRASSAUDIT_X86
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return f;
  const unsigned max_leaf = a;
  char vendor[13] = {};
  std::memcpy(vendor, &b, 4);
  std::memcpy(vendor + 4, &d, 4);
  std::memcpy(vendor + 8, &c, 4);
  f.vendor = vendor;
  __get_cpuid(1, &a, &b, &c, &d);
  f.sse3 = (c >> 0) & 1;
  f.fma = (c >> 12) & 1;
  const bool osxsave = (c >> 27) & 1;
  f.avx = (c >> 28) & 1;
  if (osxsave) {
    unsigned lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    const unsigned long long xcr0 = (static_cast<unsigned long long>(hi) << 32) | lo;
    f.os_ymm = (xcr0 & 0x6) == 0x6;              // SSE + AVX state
    f.os_zmm = f.os_ymm && (xcr0 & 0xE0) == 0xE0;  // opmask, ZMM_Hi256, Hi16_ZMM
    f.os_amx = (xcr0 & 0x60000) == 0x60000;       // XTILECFG, XTILEDATA
  }
  if (max_leaf >= 7) {
    __cpuid_count(7, 0, a, b, c, d);
    f.avx2 = (b >> 5) & 1;
    f.avx512f = (b >> 16) & 1;
    f.avx512dq = (b >> 17) & 1;
    f.avx512cd = (b >> 28) & 1;
    f.avx512bw = (b >> 30) & 1;
    f.avx512vl = (b >> 31) & 1;
    f.amx_bf16 = (d >> 22) & 1;
    f.amx_tile = (d >> 24) & 1;
    const unsigned subleaves = a;
    if (subleaves >= 1) {
      __cpuid_count(7, 1, a, b, c, d);
      f.avx512_bf16 = (a >> 5) & 1;
    }
  }
#endif
  return f;
}

std::string best_openblas_core(const CpuFeatures& f) {
  const bool avx512 = f.os_zmm && f.avx512f && f.avx512cd && f.avx512bw && f.avx512dq && f.avx512vl;
  if (avx512 && f.avx512_bf16) return "Cooperlake";
  if (avx512) return "SkylakeX";
  if (f.os_ymm && f.avx2 && f.fma) return "Haswell";
  if (f.os_ymm && f.avx) return "Sandybridge";
  if (f.sse3) return "Prescott";
  return "";
}

namespace {
// OpenBLAS's x86-64 kernel families by the instructions they need (lower case). Families not
// listed (Zen, Bulldozer, Atom, ...) are vendor-specific choices this ranking does not second-guess.
int family_rank(std::string name) {
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char ch) { return std::tolower(ch); });
  static const std::map<std::string, int> rank{
      {"katmai", 0},   {"coppermine", 0}, {"northwood", 0}, {"prescott", 0},    {"banias", 0},
      {"core2", 0},    {"penryn", 0},     {"dunnington", 0}, {"nehalem", 0},    {"sandybridge", 1},
      {"haswell", 2},  {"skylakex", 3},   {"cooperlake", 4}, {"sapphirerapids", 5}};
  auto it = rank.find(name);
  return it == rank.end() ? -1 : it->second;
}
}  // namespace

std::optional<std::string> openblas_core_upgrade(const std::string& reported, const CpuFeatures& f) {
  const std::string best = best_openblas_core(f);
  if (best.empty()) return std::nullopt;
  const int have = family_rank(reported), want = family_rank(best);
  if (have < 0 || want <= have) return std::nullopt;
  return best;
}

namespace {
// The two native bf16 matrix units, as the OS enables them.
bool amx_bf16_enabled(const CpuFeatures& f) { return f.amx_bf16 && f.amx_tile && f.os_amx; }
bool avx512_bf16_enabled(const CpuFeatures& f) { return f.avx512_bf16 && f.avx512f && f.os_zmm; }
}  // namespace

std::string cpu_matrix_units(const CpuFeatures& f) {
  std::string out;
  const auto add = [&out](const char* unit) { out += (out.empty() ? "" : ", ") + std::string(unit); };
  if (f.os_ymm && f.avx2 && f.fma) add("AVX2+FMA");
  if (f.os_zmm && f.avx512f) add("AVX-512");
  if (avx512_bf16_enabled(f)) add("AVX512_BF16");
  if (amx_bf16_enabled(f)) {
    add("AMX-BF16");
  } else if (f.amx_tile || f.amx_bf16) {
    add("AMX (not enabled by the OS)");
  } else {
    add("no AMX");
  }
  return out;
}

bool cpu_has_native_bf16(const CpuFeatures& f, std::string* why) {
  if (amx_bf16_enabled(f) || avx512_bf16_enabled(f)) return true;
  if (why)
    *why = "this CPU has no native bf16 matrix arithmetic (neither AMX-BF16 nor AVX512_BF16 enabled): bf16 would be "
           "emulated, slower than fp32";
  return false;
}

bool cpu_runs_avx512_kernels() {
  static const bool yes = [] {
    const CpuFeatures f = detect_cpu_features();
    return f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq && f.os_zmm;
  }();
  return yes;
}

}  // namespace grassaudit
