#include <gtest/gtest.h>

#include <algorithm>

#include "unity/executor/backends.h"

using unity::executor::available_backends;
using unity::executor::BackendInfo;

namespace {
const BackendInfo* find(const std::vector<BackendInfo>& all, const std::string& name) {
  auto it =
      std::find_if(all.begin(), all.end(), [&](const BackendInfo& b) { return b.name == name; });
  return it == all.end() ? nullptr : &*it;
}
}  // namespace

TEST(Backends, CpuIsAlwaysAvailableAndNamesItsLibraries) {
  const auto all = available_backends();
  ASSERT_FALSE(all.empty());
  EXPECT_EQ(all.front().name, "cpu");
  EXPECT_TRUE(all.front().available);
  // OpenBLAS's config string starts with "OpenBLAS"; Open MPI's version with "Open MPI".
  EXPECT_NE(all.front().detail.find("OpenBLAS"), std::string::npos) << all.front().detail;
  EXPECT_NE(all.front().detail.find("MPI"), std::string::npos) << all.front().detail;
}

TEST(Backends, CudaIsListedWithAReasonWhenUnavailable) {
  const auto all = available_backends();
  const BackendInfo* cuda = find(all, "cuda");
  ASSERT_NE(cuda, nullptr);
  EXPECT_FALSE(cuda->detail.empty());
#if defined(UNITY_HAVE_CUDA)
  // Compiled with CUDA: the detail names the libraries either way, the GPU only when there is one.
  EXPECT_NE(cuda->detail.find("cuBLAS"), std::string::npos) << cuda->detail;
  if (cuda->available) {
    EXPECT_NE(cuda->detail.find("GPU 0"), std::string::npos) << cuda->detail;
  } else {
    EXPECT_NE(cuda->detail.find("no CUDA device"), std::string::npos) << cuda->detail;
  }
#else
  EXPECT_FALSE(cuda->available);
  EXPECT_EQ(cuda->detail, "built without CUDA");
#endif
}

TEST(Backends, ProbingTwiceGivesTheSameAnswer) {
  // The GUI probes on every About box; a failed CUDA probe must not poison the next one.
  const auto first = available_backends();
  const auto second = available_backends();
  ASSERT_EQ(first.size(), second.size());
  for (std::size_t i = 0; i < first.size(); ++i) {
    EXPECT_EQ(first[i].name, second[i].name);
    EXPECT_EQ(first[i].available, second[i].available);
  }
}
