#include <gtest/gtest.h>

#include <algorithm>

#include "unity/executor/backends.h"
#include "unity/executor/cuda_self_test.h"

TEST(CudaKernel, FillIotaRunsOnTheGpu) {
#if defined(UNITY_HAVE_CUDA)
  const auto all = unity::executor::available_backends();
  const auto cuda =
      std::find_if(all.begin(), all.end(), [](const auto& b) { return b.name == "cuda"; });
  ASSERT_NE(cuda, all.end());
  if (!cuda->available) GTEST_SKIP() << "needs a GPU: " << cuda->detail;
  // More than one block, and a size that is not a multiple of the block, to cover the bounds check.
  constexpr std::size_t n = 1000;
  const std::vector<float> values = unity::executor::cuda_fill_iota(n, 1.5f, 0.25f);
  ASSERT_EQ(values.size(), n);
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_FLOAT_EQ(values[i], 1.5f + static_cast<float>(i) * 0.25f) << "at " << i;
  }
#else
  GTEST_SKIP() << "built without CUDA (UNITY_CUDA_ENABLED is OFF)";
#endif
}

#if defined(UNITY_HAVE_CUDA)
TEST(CudaKernel, ThrowsInsteadOfCrashingWithoutAGpu) {
  const auto all = unity::executor::available_backends();
  const auto cuda =
      std::find_if(all.begin(), all.end(), [](const auto& b) { return b.name == "cuda"; });
  ASSERT_NE(cuda, all.end());
  if (cuda->available) GTEST_SKIP() << "a GPU is present: " << cuda->detail;
  EXPECT_THROW(unity::executor::cuda_fill_iota(16, 0.0f, 1.0f), std::runtime_error);
}
#endif
