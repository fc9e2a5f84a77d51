// Control flow known at import time (onnx_ops_control_flow.cpp): tests/data/onnx/
// unrolled_control_flow.onnx writes torch.repeat_interleave the way torch exports it for a dim of
// unknown size (a Loop over sequences), an If on a constant and a scan output. Unrolled and
// inlined, the graph computes y = relu(repeat_interleave(x, 2, dim=1)) and z = 2x.
#include <gtest/gtest.h>

#include <algorithm>

#include "executor_test_support.h"
#include "unity/core/errors.h"
#include "unity/core/onnx/onnx_import.h"

namespace unity::executor {
namespace {

TEST(OnnxControlFlow, UnrolledLoopAndInlinedBranchComputeWhatTheModelSays) {
  const Graph g = import_onnx(UNITY_TEST_DATA_DIR "/onnx/unrolled_control_flow.onnx");
  EXPECT_EQ(g.count(OpType::Weight), 0);  // every constant of the loop folded
  HostTensor x;
  x.shape = {2, 3, 4};
  for (int i = 0; i < 24; ++i) x.values.push_back(static_cast<float>(i % 7) - 3.0f);
  std::map<NodeId, HostTensor> given;
  for (const auto& [id, n] : g.nodes())
    if (n.op.type == OpType::Input) given[id] = x;
  const auto out = testing::evaluate_on_one_device(g, given);

  std::vector<float> y, z;
  for (int b = 0; b < 2; ++b)
    for (int h = 0; h < 6; ++h)
      for (int c = 0; c < 4; ++c) y.push_back(std::max(0.0f, x.values[b * 12 + (h / 2) * 4 + c]));
  for (float v : x.values) z.push_back(2 * v);
  const HostTensor *got_y = nullptr, *got_z = nullptr;
  for (const auto& [ref, t] : out) {
    if (t.shape == std::vector<std::int64_t>{2, 6, 4}) got_y = &t;
    if (t.shape == std::vector<std::int64_t>{2, 3, 4}) got_z = &t;
  }
  ASSERT_NE(got_y, nullptr);
  ASSERT_NE(got_z, nullptr);
  EXPECT_EQ(got_y->values, y);
  EXPECT_EQ(got_z->values, z);
}

}  // namespace
}  // namespace unity::executor
