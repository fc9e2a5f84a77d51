// What the explorer shows of a mixture-of-experts plan (issue 31, item 6), worked out by hand:
// the experts' share of each device's memory, which experts each device holds, the all-to-all
// bytes that cross nodes, and the dispatches and combines in a predicted timeline's lanes.
#include <gtest/gtest.h>

#include <algorithm>

#include "small_moe.h"
#include "unity/core/machine/machine_spec.h"
#include "unity/core/pipeline/expert_placement.h"
#include "unity/core/pipeline/pipeline_cost.h"
#include "unity/core/pipeline/pipeline_planner.h"
#include "unity/core/pipeline/pipeline_schedule.h"
#include "unity/core/plan/plan.h"
#include "unity/core/zoo/transformer_models.h"

namespace unity::expert_placement_test {
namespace {

using testing::small_moe;

PipelineOptions fixed(int ep, bool overlap = false) {
  return testing::small_moe_layout(ep, TokenDispatcher::AllToAll, 1, overlap);
}

// Each stage holds 2 MoE layers of 16 SwiGLU experts (3 matrices of 256 x 256).
constexpr double kStageExperts = 2 * 16 * 3.0 * 256 * 256;

// On 16 H100 (pp 2, dp 8), ep 4: a device holds 4 of the 16 experts of each layer, the 2 devices
// holding the same ones (edp 2) share their optimizer state under ZeRO 1. bf16 with Adam: 2
// bytes a weight, 4 a gradient (fp32), 12 of master weights and state, halved by ZeRO 1.
TEST(ExpertPlacement, ExpertMemoryPerDeviceByHand) {
  const MachineSpec m = load_machine("dgx-h100", {0, 16});
  const auto plan = plan_pipeline(small_moe(), m, fixed(4));
  ASSERT_TRUE(plan);
  ASSERT_EQ(plan->expert_data_parallel, 2);
  const double held = kStageExperts / 4;
  for (const MemoryBreakdown& r : plan->rank_memory) {
    EXPECT_NEAR(r.expert_weights, held * 2, 1e-6);
    EXPECT_NEAR(r.expert_gradients, held * 4, 1e-6);
    EXPECT_NEAR(r.expert_optimizer, held * 12 / 2, 1e-6);
    EXPECT_NEAR(r.experts(), held * (2 + 4 + 6), 1e-6);
    // A share of the kinds, not beside them.
    EXPECT_GT(r.weights, r.expert_weights);
    EXPECT_GT(r.optimizer, r.expert_optimizer);
  }
  // Without expert parallelism every device holds all 16 of each layer, the optimizer state
  // sharded over the 8 copies as the dense weights' is.
  const auto whole = plan_pipeline(small_moe(), m, fixed(1));
  ASSERT_TRUE(whole);
  EXPECT_NEAR(whole->rank_memory[0].expert_weights, kStageExperts * 2, 1e-6);
  EXPECT_NEAR(whole->rank_memory[0].expert_optimizer, kStageExperts * 12 / 8, 1e-6);
  // The plan file keeps the shares.
  Plan file;
  file.machine = m;
  file.pipeline = *plan;
  const PipelinePlan back = plan_from_json(plan_to_json(file)).pipeline.value();
  EXPECT_NEAR(back.rank_memory[1].expert_gradients, held * 4, 1);
  EXPECT_NEAR(back.rank_memory[1].total(), plan->rank_memory[1].total(), 4);
}

// Device d of 16 (pp 2, dp 8, tp-dp-pp order): stage d / 8, place d mod 8 in the stage; ep 4
// cuts a stage into groups of 4 devices, each holding 16 / 4 experts a layer.
TEST(ExpertPlacement, WhichDeviceHoldsWhichExperts) {
  const MachineSpec m = load_machine("dgx-h100", {0, 16});
  const auto plan = plan_pipeline(small_moe(), m, fixed(4));
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->experts, 16);
  EXPECT_EQ(plan->top_k, 2);
  const ExpertPlacement d5 = expert_placement(*plan, 5);
  EXPECT_EQ(d5.stage, 0);
  EXPECT_EQ(d5.group, 1);
  EXPECT_EQ(d5.ep_rank, 1);
  EXPECT_EQ(d5.first_expert, 4);
  EXPECT_EQ(d5.last_expert, 7);
  const ExpertPlacement d11 = expert_placement(*plan, 11);
  EXPECT_EQ(d11.stage, 1);
  EXPECT_EQ(d11.group, 0);
  EXPECT_EQ(d11.first_expert, 12);
  EXPECT_EQ(d11.last_expert, 15);
  EXPECT_EQ(expert_placement(*plan, 16).stage, -1);  // not in the plan
}

// On 32 H100 (4 nodes; pp 2, dp 16) ep 16 spreads a stage's experts over its 2 nodes: each device
// sends the same bytes to each of its 15 peers (the all-to-all dispatcher), 8 of them in the
// other node.
TEST(ExpertPlacement, AllToAllBytesAcrossNodesByHand) {
  const MachineSpec m = load_machine("dgx-h100", {0, 32});
  PipelineOptions o = fixed(16);
  const auto plan = plan_pipeline(small_moe(), m, o);
  ASSERT_TRUE(plan);
  ASSERT_EQ(plan->expert_parallel, 16);
  EXPECT_GT(plan->alltoall_bytes, 0);
  EXPECT_NEAR(plan->alltoall_inter_node_bytes, plan->alltoall_bytes * 8 / 15,
              1e-9 * plan->alltoall_bytes);
  // Inside a node (ep 8 on 16 H100) none crosses.
  const auto inside = plan_pipeline(small_moe(), load_machine("dgx-h100", {0, 16}), fixed(8));
  ASSERT_TRUE(inside);
  EXPECT_GT(inside->alltoall_bytes, 0);
  EXPECT_DOUBLE_EQ(inside->alltoall_inter_node_bytes, 0);
  // The busiest rank's all-to-alls are the plan's, all exposed when not overlapped.
  const AlltoallTraffic t = alltoall_traffic(*plan);
  EXPECT_NEAR(t.seconds, plan->alltoall_time, 1e-15);
  double rank = 0;
  for (const StagePlan& c : plan->chunks)
    if (c.rank == t.busiest_rank) rank += c.exchanges.alltoall.total();
  EXPECT_NEAR(plan->micro_batches * rank, plan->alltoall_time, 1e-12);
  EXPECT_NEAR(t.exposed, t.seconds, 1e-12);
  // Overlapped with the other micro-batch (4 micro-batches of 1 on 16 H100, ep 8), less of them
  // is exposed: the steady state's hide behind their partners.
  PipelineOptions four = fixed(8, true);
  four.request.micro_batches = 4;
  const auto overlapped = plan_pipeline(small_moe(), load_machine("dgx-h100", {0, 16}), four);
  ASSERT_TRUE(overlapped && overlapped->ep_comm_overlap);
  const AlltoallTraffic h = alltoall_traffic(*overlapped);
  EXPECT_NEAR(h.seconds, overlapped->alltoall_time, 1e-15);
  EXPECT_LT(h.exposed, h.seconds);
  EXPECT_GT(h.exposed, 0);
}

// Two stages of one chunk (forward 1 s of which 0.3 s all-to-all, backward 2 s of which 0.6 s,
// 0.2 s of the backward's hidden; 0.4 s of sends), two micro-batches: a pass's compute box leaves
// out its exposed all-to-alls, which follow it as a dispatch and a combine of half each.
TEST(ExpertPlacement, DispatchAndCombineInTheTimelineByHand) {
  PipelinePlan p;
  p.pipeline_stages = 2;
  p.micro_batches = 2;
  for (int c = 0; c < 2; ++c) {
    StagePlan s;
    s.rank = c;
    s.forward = 1.0;
    s.backward = 2.0;
    s.p2p = 0.4;
    s.exchanges.alltoall = {0.3, 0.8};
    s.exchanges.alltoall_exposed = {0.3, 0.6};
    p.chunks.push_back(s);
  }
  const PipelineTimeline t = predicted_timeline(p);
  // Rank 0's first forward: compute [0, 0.7], dispatch [0.7, 0.85], combine [0.85, 1.0], then
  // its exposed sends [1.0, 1.2].
  const auto first = std::find_if(t.boxes.begin(), t.boxes.end(), [](const TimelineBox& b) {
    return b.rank == 0 && !b.backward && b.micro_batch == 0;
  });
  ASSERT_NE(first, t.boxes.end());
  EXPECT_NEAR(first->end - first->start, 0.7, 1e-12);
  std::vector<CommBox> rank0;
  for (const CommBox& c : t.comm)
    if (c.rank == 0 && c.start < 1.2 - 1e-12) rank0.push_back(c);
  ASSERT_EQ(rank0.size(), 3u);
  EXPECT_EQ(rank0[0].kind, kCommDispatch);
  EXPECT_NEAR(rank0[0].start, 0.7, 1e-12);
  EXPECT_NEAR(rank0[0].end, 0.85, 1e-12);
  EXPECT_EQ(rank0[1].kind, kCommCombine);
  EXPECT_NEAR(rank0[1].end, 1.0, 1e-12);
  EXPECT_TRUE(rank0[0].exposed && rank0[1].exposed);
  EXPECT_EQ(rank0[2].kind, kCommP2p);
  EXPECT_NEAR(rank0[2].end - rank0[2].start, 0.2, 1e-12);
  // Over the iteration each rank's lane holds its chunks' all-to-alls: exposed 2 x (0.3 + 0.6),
  // hidden 2 x 0.2 (the backward's, combine first, beside the compute).
  for (int r = 0; r < 2; ++r) {
    double exposed = 0, hidden = 0;
    for (const CommBox& c : t.comm)
      if (c.rank == r && (c.kind == kCommDispatch || c.kind == kCommCombine))
        (c.exposed ? exposed : hidden) += c.end - c.start;
    EXPECT_NEAR(exposed, 2 * 0.9, 1e-12);
    EXPECT_NEAR(hidden, 2 * 0.2, 1e-12);
  }
  const auto hiddenBox = std::find_if(t.comm.begin(), t.comm.end(),
                                      [](const CommBox& c) { return !c.exposed && c.rank == 1; });
  ASSERT_NE(hiddenBox, t.comm.end());
  EXPECT_EQ(hiddenBox->kind, kCommCombine);
  // The makespan is the schedule's: the passes' lengths are unchanged.
  EXPECT_NEAR(t.makespan, 3 * 3.4, 1e-12);
  // The plan file keeps each chunk's figures.
  Plan plan;
  plan.machine = load_machine("dgx-h100", {0, 16});
  plan.pipeline = p;
  const PipelinePlan back = plan_from_json(plan_to_json(plan)).pipeline.value();
  EXPECT_NEAR(back.chunks[1].exchanges.alltoall.backward, 0.8, 1e-12);
  EXPECT_NEAR(back.chunks[1].exchanges.alltoall_exposed.forward, 0.3, 1e-12);
}

}  // namespace
}  // namespace unity::expert_placement_test
