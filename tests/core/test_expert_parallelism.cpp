// Expert parallelism in the pipeline planner: the routing arithmetic of the two token
// dispatchers, an all-to-all's time and bytes computed by hand on two DGX H100 nodes, the expert
// weights each device holds, and the joint search choosing EP for a mixture-of-experts model.
#include <gtest/gtest.h>

#include "small_moe.h"
#include "unity/core/cost/cost_model.h"
#include "unity/core/errors.h"
#include "unity/core/machine/machine_spec.h"
#include "unity/core/pcg/compute_dtype.h"
#include "unity/core/pipeline/pipeline_cost.h"
#include "unity/core/pipeline/pipeline_planner.h"
#include "unity/core/pipeline/token_dispatch.h"
#include "unity/core/zoo/transformer_models.h"

namespace unity {
namespace {

// 2 of 8 experts: a set of 2 misses a token with C(6, 2) / C(8, 2) = 15 / 28.
TEST(ExpertParallelism, RoutingArithmetic) {
  EXPECT_NEAR(routed_probability(8, 2, 2), 13.0 / 28.0, 1e-12);
  EXPECT_DOUBLE_EQ(routed_probability(8, 2, 8), 1.0);
  EXPECT_DOUBLE_EQ(routed_probability(8, 2, 0), 0.0);
  // The all-to-all dispatcher: a copy per picked expert, spread evenly: 1000 x 2 / 4 each.
  const DispatchGroup g{{8, 2}, 4, 2};
  EXPECT_DOUBLE_EQ(dispatch_bytes(TokenDispatcher::AllToAll, g, 1000, true), 500);
  EXPECT_DOUBLE_EQ(dispatch_bytes(TokenDispatcher::AllToAll, g, 1000, false), 500);
  // DeepEP: to a device of its node when one of that device's 2 experts is picked (13/28); to
  // the other node once when one of its 4 experts is (1 - C(4,2)/C(8,2) = 11/14), arriving at
  // its 2 devices in turn.
  EXPECT_NEAR(dispatch_bytes(TokenDispatcher::DeepEp, g, 1000, true), 1000 * 13.0 / 28.0, 1e-9);
  EXPECT_NEAR(dispatch_bytes(TokenDispatcher::DeepEp, g, 1000, false), 1000 * 11.0 / 14.0 / 2,
              1e-9);
}

// Node-limited routing by hand: 8 experts in 4 groups of 2, a token's 2 taken from its best 2
// groups, one in each. A node holding one group (2 experts) gets it when that group is one of
// the 2 of 4 picked: 1 - C(3, 2) / C(4, 2) = 1/2 (unlimited 13/28); a node of 2 groups misses
// it only when the other 2 are picked: 1 - 1/6 (unlimited 11/14); one expert of a group gets
// it when its group is picked and the group's pick is it: 2/4 x 1/2, the unlimited 1/4 too.
TEST(ExpertParallelism, NodeLimitedRoutingByHand) {
  const ExpertRouting limited{8, 2, 4, 2};
  ASSERT_TRUE(limited.limited());
  EXPECT_NEAR(routed_probability(limited, 2), 0.5, 1e-12);
  EXPECT_NEAR(routed_probability(limited, 4), 5.0 / 6.0, 1e-12);
  EXPECT_NEAR(routed_probability(limited, 1), 0.25, 1e-12);
  EXPECT_DOUBLE_EQ(routed_probability(limited, 8), 1.0);
  // No limit where the groups cannot limit (one group, or all of them kept).
  EXPECT_FALSE((ExpertRouting{8, 2, 4, 4}.limited()));
  EXPECT_NEAR(routed_probability(ExpertRouting{8, 2, 1, 1}, 2), 13.0 / 28.0, 1e-12);
  // DeepEP on 2 nodes of 2 devices (2 experts each): inside the node as for one group, across
  // once a node.
  const DispatchGroup g{limited, 4, 2};
  EXPECT_NEAR(dispatch_bytes(TokenDispatcher::DeepEp, g, 1000, true), 500, 1e-9);
  EXPECT_NEAR(dispatch_bytes(TokenDispatcher::DeepEp, g, 1000, false), 1000 * 5.0 / 6.0 / 2, 1e-9);
  // The all-to-all dispatcher sends a copy per picked expert either way.
  EXPECT_DOUBLE_EQ(dispatch_bytes(TokenDispatcher::AllToAll, g, 1000, false), 500);
  // DeepSeek-V3's on EP 64 over 8 nodes: a node (32 experts, one group) gets a token half the
  // time, against 1 - C(224, 8) / C(256, 8) = 0.662 unlimited.
  EXPECT_NEAR(routed_probability(ExpertRouting{256, 8, 8, 4}, 32), 0.5, 1e-12);
  EXPECT_NEAR(routed_probability(256, 8, 32), 0.6618, 1e-4);
}

// The batch-level overlap by hand: 10 s of all-to-all, 4 s of the partner's dense compute, a
// tenth of the micro-batches alone: 1 s exposed alone, 9 s hidden of which 5 outlast the
// partner, and the 4 s overlapped cost 4 x 20 / 132 of compute.
TEST(ExpertParallelism, OverlappedAllToAllByHand) {
  EXPECT_NEAR(exposed_expert_alltoall(10, 4, 0.1, 20, 132), 1 + 5 + 4.0 * 20 / 132, 1e-12);
  // Nothing alone and compute to spare: only the SMs' share.
  EXPECT_NEAR(exposed_expert_alltoall(2, 8, 0, 20, 132), 2.0 * 20 / 132, 1e-12);
  // All alone (a single micro-batch): all of it.
  EXPECT_DOUBLE_EQ(exposed_expert_alltoall(2, 8, 1, 20, 132), 2);
}

using testing::small_moe;

PipelineOptions fixed(int ep, TokenDispatcher d) { return testing::small_moe_layout(ep, d, 0); }

// On 2 DGX H100 nodes (16 GPUs): tp 1, pp 2, dp 8; ep 8 puts each stage's expert group on one
// node... and 2 micro-batches of 2 samples (256 tokens, 512 bytes each in bf16).
TEST(ExpertParallelism, AllToAllTimeAndBytesByHand) {
  const MachineSpec m = load_machine("dgx-h100", {0, 16});
  const Graph g = small_moe();
  const auto plan = plan_pipeline(g, m, fixed(8, TokenDispatcher::AllToAll));
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->expert_parallel, 8);
  EXPECT_EQ(plan->expert_data_parallel, 1);
  // One dispatch: each device sends each of the 7 others 256 x 512 x 2 / 8 bytes over NVLink;
  // a receiver takes its 7 one after another.
  const double message = 2 * 128 * 256 * 2.0;  // tokens x hidden x bf16
  const double pair = message * 2 / 8;
  const LinkSpec& nvlink = m.link(0, 1);
  const double one = 7 * pair / nvlink.bandwidth + nvlink.latency;
  // Dispatch and combine forward and backward, 2 MoE layers a rank, 2 micro-batches.
  EXPECT_NEAR(plan->alltoall_time, 4 * one * 2 * 2, 1e-12);
  // Bytes: 8 senders x 7 pairs, 4 all-to-alls, 4 layers, 2 micro-batches, 8 copies / 8 per group.
  EXPECT_NEAR(plan->alltoall_bytes, 8 * 7 * pair * 4 * 4 * 2, 1);
}

// DeepEP across nodes with the router's group limit: small_moe's 16 experts on EP 16 over 2 DGX
// H100 nodes (8 experts a node) in 2 groups, a token's 2 from its best 1: each token crosses to
// the other node only when its group is there, half the time, against 1 - C(8, 2) / C(16, 2) =
// 0.767 unlimited.
TEST(ExpertParallelism, NodeLimitedRoutingCutsTheBytesBetweenNodes) {
  const MachineSpec m = load_machine("dgx-h100", {0, 32});
  auto limited = [](std::int64_t groups) {
    zoo::TransformerSizes z{4, 256, 4, 4, 512, 128, 1024};
    z.experts = 16;
    z.experts_per_token = 2;
    z.expert_ffn = 256;
    z.normalize_top_k = true;
    z.route_groups = groups;
    z.route_group_top_k = groups > 1 ? 1 : 0;
    return zoo::build_llama(32, z, DataType::BFloat16);
  };
  const auto free = plan_pipeline(limited(0), m, fixed(16, TokenDispatcher::DeepEp));
  const auto kept = plan_pipeline(limited(2), m, fixed(16, TokenDispatcher::DeepEp));
  ASSERT_TRUE(free && kept);
  ASSERT_EQ(kept->expert_parallel, 16);
  EXPECT_NEAR(kept->alltoall_inter_node_bytes / free->alltoall_inter_node_bytes,
              0.5 / routed_probability(16, 2, 8), 1e-9);
  EXPECT_LT(kept->alltoall_time, free->alltoall_time);
}

// An Experts task at its expert-parallel shape, by hand: small_moe's 16 experts of 256 x 256 (bf16,
// SwiGLU: 3 matrices), 32 x 128 tokens top 2, whole on one device; spread 4 times thinner the task
// runs the same routed tokens (4,096 x 2) through 4 experts fed by 4 devices' tokens: the same
// FLOPs, 3/4 of the 786,432 weight elements (2 bytes each) no longer read, and 4 times the rows of
// each expert's GEMM.
TEST(ExpertParallelism, ExpertTaskAtItsExpertParallelShape) {
  Graph g = small_moe();
  const NodeId experts = testing::an_experts_node(g);
  ASSERT_GE(experts, 0);
  const TaskWork whole = task_work(g, experts);
  g.mutable_node(experts).op.attrs.set("expert_parallel", std::int64_t{4});
  const TaskWork spread = task_work(g, experts);
  const double routed = 32.0 * 128 * 2;
  EXPECT_DOUBLE_EQ(whole.flops, 2.0 * routed * 256 * 256 * 3);
  EXPECT_DOUBLE_EQ(spread.flops, whole.flops);
  EXPECT_DOUBLE_EQ(whole.bytes - spread.bytes, 16.0 * 3 * 256 * 256 * 2 * 3 / 4);
  EXPECT_DOUBLE_EQ(whole.gemms[0].m, routed / 16);
  EXPECT_DOUBLE_EQ(spread.gemms[0].m, routed / 4);
  EXPECT_DOUBLE_EQ(spread.gemms[0].count, 4);  // 4 experts' up-and-gate products at once
  EXPECT_DOUBLE_EQ(whole.gemms[0].count, 4);   // of 16: four streams
  EXPECT_DOUBLE_EQ(whole.launches, 2 * 16 + 1);
  EXPECT_DOUBLE_EQ(spread.launches, 2 * 4 + 1);
}

// Each device holds 1/ep of a rank's experts: from ep 1 (every expert on each device, tp 1) to
// ep 8 the weights held drop by 7/8 of the rank's experts, in bf16.
TEST(ExpertParallelism, ExpertWeightsPerDevice) {
  const MachineSpec m = load_machine("dgx-h100", {0, 16});
  const Graph g = small_moe();
  const auto whole = plan_pipeline(g, m, fixed(1, TokenDispatcher::AllToAll));
  const auto spread = plan_pipeline(g, m, fixed(8, TokenDispatcher::AllToAll));
  ASSERT_TRUE(whole && spread);
  const double experts_per_rank = 2 * 16 * 3.0 * 256 * 256;  // 2 layers, 16 SwiGLU experts
  EXPECT_NEAR(whole->rank_memory[0].weights - spread->rank_memory[0].weights,
              experts_per_rank * 7 / 8 * 2, 1);
  // With ep 8 of dp 8 no two devices hold the same experts: nothing to synchronise for them.
  EXPECT_LT(spread->sync_time, whole->sync_time);
  // In fp8 each device also keeps its experts' fp8 copies (2 bytes a parameter beside the bf16
  // one): those leave with the experts too, 4 bytes a parameter in all.
  Graph fp8 = g;
  set_fp8_gemms(fp8);
  const auto whole8 = plan_pipeline(fp8, m, fixed(1, TokenDispatcher::AllToAll));
  const auto spread8 = plan_pipeline(fp8, m, fixed(8, TokenDispatcher::AllToAll));
  ASSERT_TRUE(whole8 && spread8);
  EXPECT_NEAR(whole8->rank_memory[0].weights - spread8->rank_memory[0].weights,
              experts_per_rank * 7 / 8 * 4, 1);
}

TEST(ExpertParallelism, RefusesDegreesThatDoNotFold) {
  const MachineSpec m = load_machine("dgx-h100", {0, 16});
  const Graph g = small_moe();
  // 16 experts over 3 devices: refused whatever the grid, saying why.
  try {
    plan_pipeline(g, m, fixed(3, TokenDispatcher::AllToAll));
    ADD_FAILURE() << "planned";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--ep 3: the 16 experts of each mixture-of-experts layer "
                                         "of '"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("do not split evenly over 3 devices"), std::string::npos)
        << e.what();
  }
  // A dense model has no experts to spread.
  zoo::TransformerSizes dense{4, 256, 4, 4, 512, 128, 1024};
  EXPECT_THROW(plan_pipeline(zoo::build_llama(32, dense), m, fixed(8, TokenDispatcher::AllToAll)),
               InputError);
}

// Qwen3-30B-A3B's 128 experts on 2 nodes: the joint search spreads them (with the experts whole
// on each device the weights and their optimizer state do not fit, or sync longer).
TEST(ExpertParallelism, TheJointSearchChoosesExpertParallelism) {
  const MachineSpec m = load_machine("dgx-h100", {0, 16});
  zoo::TransformerSizes z{48, 2048, 32, 4, 6144, 1024, 151936};
  z.head_dim = 128;
  z.experts = 128;
  z.experts_per_token = 8;
  z.expert_ffn = 768;
  z.normalize_top_k = true;
  const Graph g = zoo::build_llama(64, z, DataType::BFloat16);
  PipelineOptions o;
  o.joint = true;
  o.budget = 20;
  o.request.tensor_parallel = 1;
  const auto plan = plan_pipeline(g, m, o);
  ASSERT_TRUE(plan);
  EXPECT_TRUE(plan->fits);
  EXPECT_GT(plan->expert_parallel, 1);
  PipelineOptions none = o;
  none.request.expert_parallel = 1;
  const auto without = plan_pipeline(g, m, none);
  ASSERT_TRUE(without);
  EXPECT_TRUE(!without->fits || without->iteration_time > plan->iteration_time);
}

}  // namespace
}  // namespace unity
