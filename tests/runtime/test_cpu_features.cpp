// The CPU-flags-to-OpenBLAS-kernel mapping: the best family the CPU has and
// the OS enables, an upgrade only over a lower family OpenBLAS fell back to, never a kernel whose
// instructions are missing, never over a vendor-specific target; native bf16 detection.
#include <gtest/gtest.h>

#include "runtime/cpu_features.h"

using namespace grassaudit;

namespace {
CpuFeatures sse3() {
  CpuFeatures f;
  f.vendor = "GenuineIntel";
  f.sse3 = true;
  return f;
}
CpuFeatures avx2() {
  auto f = sse3();
  f.avx = f.avx2 = f.fma = f.os_ymm = true;
  return f;
}
CpuFeatures avx512() {
  auto f = avx2();
  f.avx512f = f.avx512cd = f.avx512bw = f.avx512dq = f.avx512vl = f.os_zmm = true;
  return f;
}
CpuFeatures sapphire_rapids() {  // the Xeon: AVX-512, AVX512_BF16, AMX
  auto f = avx512();
  f.avx512_bf16 = f.amx_tile = f.amx_bf16 = f.os_amx = true;
  return f;
}
}  // namespace

TEST(CpuFeatures, BestFamilyFollowsTheFlagsAndTheOs) {
  EXPECT_EQ(best_openblas_core(sse3()), "Prescott");
  EXPECT_EQ(best_openblas_core(avx2()), "Haswell");
  EXPECT_EQ(best_openblas_core(avx512()), "SkylakeX");
  EXPECT_EQ(best_openblas_core(sapphire_rapids()), "Cooperlake");
  auto no_fma = avx2();
  no_fma.fma = false;
  EXPECT_EQ(best_openblas_core(no_fma), "Sandybridge");
  auto os_without_zmm = sapphire_rapids();  // the CPU has AVX-512, the OS does not save ZMM
  os_without_zmm.os_zmm = false;
  EXPECT_EQ(best_openblas_core(os_without_zmm), "Haswell");
  auto no_vl = avx512();  // AVX-512 F without VL: SkylakeX kernels would fault
  no_vl.avx512vl = false;
  EXPECT_EQ(best_openblas_core(no_vl), "Haswell");
  EXPECT_EQ(best_openblas_core(CpuFeatures{}), "");
}

TEST(CpuFeatures, UpgradeOnlyFromALowerFamily) {
  // The case: Prescott reported on a Xeon with AVX-512 BF16 and AMX.
  EXPECT_EQ(openblas_core_upgrade("Prescott", sapphire_rapids()), std::optional<std::string>("Cooperlake"));
  EXPECT_EQ(openblas_core_upgrade("Haswell", avx512()), std::optional<std::string>("SkylakeX"));
  EXPECT_EQ(openblas_core_upgrade("Prescott", avx2()), std::optional<std::string>("Haswell"));
  // Already the best (or better than the flags say): left alone.
  EXPECT_EQ(openblas_core_upgrade("Haswell", avx2()), std::nullopt);
  EXPECT_EQ(openblas_core_upgrade("Cooperlake", sapphire_rapids()), std::nullopt);
  EXPECT_EQ(openblas_core_upgrade("SapphireRapids", sapphire_rapids()), std::nullopt);
  EXPECT_EQ(openblas_core_upgrade("SkylakeX", avx2()), std::nullopt);  // never downgrade
  // Vendor-specific or unknown targets are OpenBLAS's informed choice.
  EXPECT_EQ(openblas_core_upgrade("Zen", avx512()), std::nullopt);
  EXPECT_EQ(openblas_core_upgrade("", avx512()), std::nullopt);
  // Case-insensitive names (OpenBLAS reports "Prescott", accepts "PRESCOTT").
  EXPECT_EQ(openblas_core_upgrade("PRESCOTT", avx2()), std::optional<std::string>("Haswell"));
  // Never a kernel whose instructions the CPU lacks: whatever was reported, the upgrade is the best it has.
  for (const auto& f : {sse3(), avx2(), avx512(), sapphire_rapids()})
    for (const char* reported : {"Prescott", "Core2", "Nehalem", "Sandybridge", "Haswell", "SkylakeX"})
      if (auto up = openblas_core_upgrade(reported, f)) EXPECT_EQ(*up, best_openblas_core(f)) << reported;
}

TEST(CpuFeatures, NativeBf16NeedsAmxOrAvx512Bf16EnabledByTheOs) {
  std::string why;
  EXPECT_TRUE(cpu_has_native_bf16(sapphire_rapids(), &why));
  EXPECT_FALSE(cpu_has_native_bf16(avx512(), &why));
  EXPECT_NE(why.find("no native bf16"), std::string::npos);
  auto amx_only = avx512();
  amx_only.amx_tile = amx_only.amx_bf16 = amx_only.os_amx = true;
  EXPECT_TRUE(cpu_has_native_bf16(amx_only, nullptr));
  amx_only.os_amx = false;  // tiles not enabled by the OS
  EXPECT_FALSE(cpu_has_native_bf16(amx_only, nullptr));
}

TEST(CpuFeatures, DetectionOnThisMachineIsConsistent) {
  const auto f = detect_cpu_features();
  EXPECT_FALSE(f.vendor.empty());
  if (f.avx512f) EXPECT_TRUE(f.avx2);
  if (f.os_zmm) EXPECT_TRUE(f.os_ymm);
  EXPECT_FALSE(best_openblas_core(f).empty());
}

TEST(CpuFeatures, MatrixUnitsNameWhatTheOsEnables) {
  EXPECT_EQ(cpu_matrix_units(sse3()), "no AMX");
  EXPECT_EQ(cpu_matrix_units(avx2()), "AVX2+FMA, no AMX");
  auto epyc = avx512();  // the development machine: AVX512_BF16 without AMX
  epyc.avx512_bf16 = true;
  EXPECT_EQ(cpu_matrix_units(epyc), "AVX2+FMA, AVX-512, AVX512_BF16, no AMX");
  EXPECT_EQ(cpu_matrix_units(sapphire_rapids()), "AVX2+FMA, AVX-512, AVX512_BF16, AMX-BF16");
  auto tiles_off = sapphire_rapids();
  tiles_off.os_amx = false;
  EXPECT_EQ(cpu_matrix_units(tiles_off), "AVX2+FMA, AVX-512, AVX512_BF16, AMX (not enabled by the OS)");
}
