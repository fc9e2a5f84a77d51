// DeviceSpec::lowers_convolutions_through_memory: a device that runs a convolution as Unity's CPU
// executor does (im2col into a columns matrix, a GEMM over it, the bias added in a pass of its
// own) pays for those bytes beside the convolution's FLOPs. By hand, x [2, 4, 8, 8] through a 3x3
// convolution (padding 1) to 6 channels with a bias: 2 x 64 output positions, each a window of
// 4 x 9 inputs, 4,608 column elements written and read again (36,864 bytes in fp32), and the
// output's 3,072 bytes read and written to add the bias (6,144): 43,008 bytes, 43.008 us at
// 1 GB/s, forward; the backward pass twice that (its weight gradient builds the columns again,
// its data gradient writes them and adds them back).
#include <gtest/gtest.h>

#include "../one_device_machine.h"
#include "unity/core/cost/cost_model.h"
#include "unity/core/pcg/graph_builder.h"

namespace unity {
namespace {

DeviceSpec core(bool lowers) {
  DeviceSpec d = testing_machines::ideal_device(1e9, 1e9);
  d.name = "core";
  d.kind = "cpu";
  d.lowers_convolutions_through_memory = lowers;
  return d;
}

// The forward and backward seconds a lowering device adds to one convolution.
OpTimes lowering_time(const Graph& g, NodeId conv) {
  const DeviceSpec on = core(true), off = core(false);
  const OpTimes with = CostModel(testing_machines::one_device_machine(on)).task_times(g, conv, on);
  const OpTimes without =
      CostModel(testing_machines::one_device_machine(off)).task_times(g, conv, off);
  return {with.forward - without.forward, with.backward - without.backward};
}

NodeId conv(Graph& g, std::vector<std::int64_t> x_shape, std::int64_t out, std::int64_t k,
            std::int64_t stride, std::int64_t pad, std::int64_t groups, bool bias) {
  GraphBuilder b(g);
  TensorRef x = b.input("x", std::move(x_shape));
  return b.conv2d(x, out, {k, k}, {stride, stride}, {pad, pad}, "conv", groups, bias).node;
}

TEST(ConvLowering, ColumnsAndTheBiasPassAddTheirBytes) {
  Graph g;
  const NodeId c = conv(g, {2, 4, 8, 8}, 6, 3, 1, 1, 1, /*bias=*/true);
  const OpTimes extra = lowering_time(g, c);
  EXPECT_NEAR(extra.forward, 43008 / 1e9, 1e-12);
  EXPECT_NEAR(extra.backward, 2 * 43008 / 1e9, 1e-12);
}

// A grouped convolution's columns hold every group's windows: the same 4,608 elements for 2
// groups of two channels as for one group of four.
TEST(ConvLowering, AGroupedConvolutionsColumnsHoldEveryGroup) {
  Graph g;
  const NodeId c = conv(g, {2, 4, 8, 8}, 4, 3, 1, 1, /*groups=*/2, /*bias=*/false);
  EXPECT_NEAR(lowering_time(g, c).forward, 36864 / 1e9, 1e-12);
}

// A depthwise convolution (a group a channel) is weighted directly, with no columns: only its
// bias pass, 2 x 2 x 4 x 64 x 4 bytes (4,096).
TEST(ConvLowering, ADepthwiseConvolutionBuildsNoColumns) {
  Graph g;
  const NodeId c = conv(g, {2, 4, 8, 8}, 4, 3, 1, 1, /*groups=*/4, /*bias=*/true);
  EXPECT_NEAR(lowering_time(g, c).forward, 4096 / 1e9, 1e-12);
}

// Where the device states its depthwise kernel's rate (a CPU's, measured), a depthwise
// convolution's multiply-adds run at it instead of as FLOPs at the peak: 2 x 4 x 64 outputs x 9
// taps, 4,608 at 1 ns, 4.608 us forward (its bytes at 1 TB/s are less).
TEST(ConvLowering, ADepthwiseConvolutionRunsAtItsMeasuredRate) {
  Graph g;
  const NodeId c = conv(g, {2, 4, 8, 8}, 4, 3, 1, 1, /*groups=*/4, /*bias=*/false);
  DeviceSpec d = testing_machines::ideal_device(1e12, 1e12);
  d.depthwise_mac_seconds = 1e-9;
  const OpTimes t = CostModel(testing_machines::one_device_machine(d)).task_times(g, c, d);
  EXPECT_NEAR(t.forward, 4608e-9, 1e-15);
  d.depthwise_mac_seconds = 0;  // the presets': 9,216 FLOPs at 1 TFLOP/s
  EXPECT_NEAR(CostModel(testing_machines::one_device_machine(d)).task_times(g, c, d).forward,
              9216e-12, 1e-15);
}

// A 1x1 convolution with stride 1 reads its input as it is (no columns); with stride 2 it gathers
// every other position first: 2 x 16 positions x 4 channels, 128 elements, 1,024 bytes.
TEST(ConvLowering, OnlyAStridedOrWiderKernelBuildsColumns) {
  Graph dense;
  EXPECT_DOUBLE_EQ(lowering_time(dense, conv(dense, {2, 4, 8, 8}, 6, 1, 1, 0, 1, false)).forward,
                   0.0);
  Graph strided;
  EXPECT_NEAR(lowering_time(strided, conv(strided, {2, 4, 8, 8}, 6, 1, 2, 0, 1, false)).forward,
              1024 / 1e9, 1e-12);
}

// A machine file keeps the field; absent, it is off, as in every preset (cuDNN's implicit GEMM
// never writes the columns out).
TEST(ConvLowering, MachineFilesKeepTheField) {
  MachineSpec m = testing_machines::one_device_machine(core(true));
  m.intra_island = m.inter_island = m.inter_node = {"link", 1e9, 1e-6};
  EXPECT_TRUE(
      machine_from_json(machine_to_json(m)).device_types.at(0).lowers_convolutions_through_memory);
  nlohmann::json j = machine_to_json(m);
  j["device_types"][0].erase("lowers_convolutions_through_memory");
  EXPECT_FALSE(machine_from_json(j).device_types.at(0).lowers_convolutions_through_memory);
  for (const char* preset : {"cpu-local", "dgx-h100", "summit"})
    EXPECT_FALSE(load_machine(preset).device_types.at(0).lowers_convolutions_through_memory)
        << preset;
}

}  // namespace
}  // namespace unity
