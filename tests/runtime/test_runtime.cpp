// Thread settings reach the BLAS as well as LibTorch's OpenMP pool.
#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include "runtime/runtime.h"

namespace grassaudit {
namespace {

TEST(Runtime, ThreadCountReachesOpenBlas) {
  // Only meaningful when the BLAS is OpenBLAS (the project's setup installs it); with another
  // BLAS blas_threads() is 0 and there is no pool to size.
  const std::string blas = blas_in_use();
  if (blas.find("OpenBLAS") == std::string::npos) GTEST_SKIP() << "BLAS is " << blas;
  EXPECT_EQ(configure_threads(1), 1);
  EXPECT_EQ(blas_threads(), 1);
  EXPECT_EQ(configure_threads(2), 2);
  EXPECT_EQ(blas_threads(), 2);
  configure_threads(1);
}

}  // namespace
}  // namespace grassaudit
