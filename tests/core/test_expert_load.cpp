// The experts' load (expert_load.h): a dropless router's stated imbalance, or a capacity factor
// with padding, on the busiest device's experts and all-to-all. By hand on small_moe (tests/core/
// small_moe.h), whose all-to-all test (ExpertParallelism.AllToAllTimeAndBytesByHand) these extend.
#include <gtest/gtest.h>

#include "small_moe.h"
#include "unity/core/cost/cost_model.h"
#include "unity/core/machine/machine_spec.h"
#include "unity/core/pipeline/expert_load.h"
#include "unity/core/pipeline/pipeline_planner.h"

namespace unity {
namespace {

using testing::small_moe;

TEST(ExpertLoad, FactorOfEachRouting) {
  EXPECT_TRUE(ExpertLoad{}.balanced());
  EXPECT_DOUBLE_EQ(ExpertLoad{}.factor(true), 1.0);
  // Dropless: only experts spread over devices are imbalanced among them.
  const ExpertLoad skewed{.imbalance = 1.5};
  EXPECT_DOUBLE_EQ(skewed.factor(true), 1.5);
  EXPECT_DOUBLE_EQ(skewed.factor(false), 1.0);
  // Capped and padded: every device runs its capacity, wherever its experts are.
  const ExpertLoad capped{.capacity_factor = 1.25};
  EXPECT_FALSE(capped.dropless());
  EXPECT_DOUBLE_EQ(capped.factor(true), 1.25);
  EXPECT_DOUBLE_EQ(capped.factor(false), 1.25);
}

// The Experts task runs load x its routed tokens: small_moe's 32 x 128 tokens, top 2, through
// 16 experts of 256 x 256 (SwiGLU), at 1.5 x: 2 x 1.5 x 8,192 x 256 x 256 x 3 FLOPs.
TEST(ExpertLoad, ExpertTaskRunsItsLoadOfTokens) {
  Graph g = small_moe();
  const NodeId experts = testing::an_experts_node(g);
  ASSERT_GE(experts, 0);
  g.mutable_node(experts).op.attrs.set("expert_load", 1.5);
  const TaskWork w = task_work(g, experts);
  EXPECT_DOUBLE_EQ(w.flops, 2.0 * 1.5 * 32 * 128 * 2 * 256 * 256 * 3);
  EXPECT_DOUBLE_EQ(w.gemms[0].m, 1.5 * 32 * 128 * 2 / 16);
}

PipelineOptions layout(int ep, ExpertLoad load) {
  PipelineOptions o = testing::small_moe_layout(ep, TokenDispatcher::AllToAll, 0);
  o.request.expert_load = load;
  return o;
}

// On 2 DGX H100 nodes, ep 8 (one node's expert group): a receiver takes 7 messages of 256 x 512 x
// 2 / 8 bytes, times the load, one after another over NVLink. Dropless at 1.5 x the busiest
// receives 1.5 x as much and the others send no more; a capacity factor of 1.5 pads every
// message to it.
TEST(ExpertLoad, AllToAllWaitsForTheBusiestDeviceByHand) {
  const MachineSpec m = load_machine("dgx-h100", {0, 16});
  const Graph g = small_moe();
  const double pair = 2 * 128 * 256 * 2.0 * 2 / 8;
  const LinkSpec& nvlink = m.link(0, 1);
  const double one = 7 * 1.5 * pair / nvlink.bandwidth + nvlink.latency;
  const auto balanced = plan_pipeline(g, m, layout(8, {}));
  const auto skewed = plan_pipeline(g, m, layout(8, {.imbalance = 1.5}));
  const auto capped = plan_pipeline(g, m, layout(8, {.capacity_factor = 1.5}));
  ASSERT_TRUE(balanced && skewed && capped);
  // Dispatch and combine forward and backward, 2 MoE layers a rank, 2 micro-batches.
  EXPECT_NEAR(skewed->alltoall_time, 4 * one * 2 * 2, 1e-12);
  EXPECT_NEAR(capped->alltoall_time, 4 * one * 2 * 2, 1e-12);
  EXPECT_NEAR(skewed->alltoall_bytes, balanced->alltoall_bytes, 1);
  EXPECT_NEAR(capped->alltoall_bytes, 1.5 * balanced->alltoall_bytes, 1);
  EXPECT_GT(skewed->iteration_time, balanced->iteration_time);
  EXPECT_DOUBLE_EQ(skewed->expert_load.imbalance, 1.5);
  EXPECT_DOUBLE_EQ(capped->expert_load.capacity_factor, 1.5);
}

// With every expert on each device (ep 1, tp 1) a dropless router's imbalance among experts
// costs nothing: the device runs every routed token either way. Padding still costs.
TEST(ExpertLoad, ImbalanceCostsNothingWhereOneDeviceHoldsEveryExpert) {
  const MachineSpec m = load_machine("dgx-h100", {0, 16});
  const Graph g = small_moe();
  const auto balanced = plan_pipeline(g, m, layout(1, {}));
  const auto skewed = plan_pipeline(g, m, layout(1, {.imbalance = 2}));
  const auto capped = plan_pipeline(g, m, layout(1, {.capacity_factor = 2}));
  ASSERT_TRUE(balanced && skewed && capped);
  EXPECT_DOUBLE_EQ(skewed->iteration_time, balanced->iteration_time);
  EXPECT_GT(capped->iteration_time, balanced->iteration_time);
}

}  // namespace
}  // namespace unity
