// Where a pipelined plan's devices sit (device_order.h), and what a ring across pods gets of the
// pods' oversubscribed uplinks (CostModel::allreduce_time), by hand.
#include <gtest/gtest.h>

#include <cmath>

#include "unity/core/cost/cost_model.h"
#include "unity/core/errors.h"
#include "unity/core/pipeline/device_order.h"

namespace unity::device_order_test {

TEST(DeviceOrder, TensorParallelInnermostThenEitherOrder) {
  // TP 2, PP 3, DP 4: 24 devices.
  const PipelineGrid megatron{2, 3, 4, DeviceOrder::PipelineOutermost};
  const PipelineGrid llama{2, 3, 4, DeviceOrder::DataParallelOutermost};
  // Stage 1, copy 2, device 1: (1 x 4 + 2) x 2 + 1 with the pipeline outermost; (2 x 3 + 1) x 2 + 1
  // with the copies outermost.
  EXPECT_EQ(megatron.device(1, 2, 1), 13);
  EXPECT_EQ(llama.device(1, 2, 1), 15);
  // A stage's copies are neighbours in one order, a replica's stages in the other.
  EXPECT_EQ(megatron.device(0, 1, 0) - megatron.device(0, 0, 0), 2);
  EXPECT_EQ(llama.device(1, 0, 0) - llama.device(0, 0, 0), 2);
  for (const PipelineGrid& g : {megatron, llama})
    for (int d = 0; d < 24; ++d) {
      const GridPosition at = g.position(d);
      EXPECT_EQ(g.device(at.stage, at.copy, at.index), d);
    }
  EXPECT_EQ(device_order_from_string("tp-pp-dp"), DeviceOrder::DataParallelOutermost);
  EXPECT_EQ(to_string(DeviceOrder::PipelineOutermost), "tp-dp-pp");
  EXPECT_THROW(device_order_from_string("pp-tp-dp"), InputError);
}

TEST(DeviceOrder, GroupsOfAStageInMegatronCoresRankOrder) {
  // TP 2, CP 2, PP 2, DP 2, the pipeline outermost: stage 1 holds devices 8-15, a replica 4 of
  // them (tensor-parallel ranks innermost, then the sequence shards), its two copies next.
  const PipelineGrid g{2, 2, 2, DeviceOrder::PipelineOutermost, 2};
  EXPECT_EQ(g.nth_device(1, 0), 8);
  EXPECT_EQ(g.nth_device(1, 5), 13);  // copy 1, index 1
  // The weights' holders: tensor-parallel rank 0 of every shard of every copy.
  EXPECT_EQ(g.data_parallel_group(1), (std::vector<int>{8, 10, 12, 14}));
  // EP 4: the first four devices exchange tokens; every fourth holds the same experts.
  EXPECT_EQ(g.expert_group(1, 4), (std::vector<int>{8, 9, 10, 11}));
  EXPECT_EQ(g.expert_data_group(1, 4), (std::vector<int>{8, 12}));
  // One ring of sequence shards a tensor-parallel rank, in the first copy.
  EXPECT_EQ(g.context_groups(0), (std::vector<std::vector<int>>{{0, 2}, {1, 3}}));
}

TEST(PodCrossingRing, SharesThePodsUplinksWithTheOtherGroupsRings) {
  // The Llama 3 cluster: pods of 3,072 GPUs, 50 GB/s per GPU inside, 7.14 GB/s per GPU when a
  // whole pod sends across.
  const CostModel model(load_machine("dgx-h100", {0, 6144}));
  const MachineSpec& m = model.machine();
  const double bytes = 1e9;
  const auto ring = [&](int k, double bandwidth, double latency) {
    return 2.0 * (k - 1) * (bytes / k / bandwidth + latency);
  };
  const auto tree = [&](int k, double bandwidth, double latency) {
    return 2.0 * std::ceil(std::log2(k)) * latency + 2.0 * bytes / bandwidth;
  };
  const double pod_latency = m.inter_pod.latency;
  // One device in each pod: the crossing hop gets one device's share, 7.14 GB/s.
  const std::vector<int> alone{0, 3072};
  EXPECT_DOUBLE_EQ(model.allreduce_time(alone, bytes),
                   std::min(ring(2, m.inter_pod.bandwidth, pod_latency),
                            tree(2, m.inter_pod.bandwidth, pod_latency)));
  // Eight devices in each pod (eight nodes each): 8 x 7.14 = 57 GB/s, capped by the 50 GB/s NIC,
  // as inside a pod.
  std::vector<int> spread;
  for (int i = 0; i < 8; ++i) {
    spread.push_back(8 * i);
    spread.push_back(3072 + 8 * i);
  }
  EXPECT_DOUBLE_EQ(model.allreduce_time(spread, bytes),
                   std::min(ring(16, m.inter_node.bandwidth, pod_latency),
                            tree(16, m.inter_node.bandwidth, pod_latency)));
}

}  // namespace unity::device_order_test
