// The test binaries' main: GoogleTest's, except that a run whose every selected test skipped
// (GTEST_SKIP: no CUDA, no shared data) exits 77, which ctest reports as skipped
// (tests/gtest_groups.cmake: one ctest entry runs a group of tests; it passes when one of them
// passes and none fails, and reads as skipped only when all of them skipped).
#include <gtest/gtest.h>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const int rc = RUN_ALL_TESTS();
  const ::testing::UnitTest& run = *::testing::UnitTest::GetInstance();
  if (rc == 0 && run.test_to_run_count() > 0 && run.skipped_test_count() == run.test_to_run_count()) return 77;
  return rc;
}
