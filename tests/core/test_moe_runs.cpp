// Published mixture-of-experts runs (shared/reference/moe-runs.md) planned with their layouts
// fixed. Qwen3-235B-A22B on 256 H100 (NVIDIA's Megatron-MoE model zoo): TP 2, EP 32 (cross-node,
// DeepEP), PP 8 with 4 virtual stages, DP 16, micro-batch 1, global batch 2,048 of 4,096 tokens,
// on Megatron-Core's stack (sequence parallelism, TP overlap, the distributed optimizer with its
// overlapped reduce, fused attention). Its "norm, act" recomputation re-runs element-wise work
// only, which Unity's levels do not name: none is taken. The other rows wait for what they need:
// the intra-node row's 94 layers on 32 stages of 3 chunks (the embedding and the loss counted as
// layers), DeepSeek-V3's latent attention.
#include <gtest/gtest.h>

#include "unity/core/machine/machine_spec.h"
#include "unity/core/plan/plan_optimizer.h"

namespace unity {
namespace {

OptimizeOptions qwen3_layout(bool overlapped) {
  OptimizeOptions o;
  o.mode = "expert";
  o.layout.tensor_parallel = 2;
  o.layout.pipeline_stages = 8;
  o.layout.interleave = 4;
  o.layout.micro_batches = 128;
  o.layout.expert_parallel = 32;
  o.layout.dispatcher = TokenDispatcher::DeepEp;
  o.layout.zero_stage = 1;
  o.layout.overlap_grad_reduce = true;
  o.layout.recompute = Recompute::None;
  o.layout.sequence_parallel = true;
  o.layout.tp_comm_overlap = true;
  o.pins = {"fuse_attention"};
  o.layout.ep_comm_overlap = overlapped;
  return o;
}

// The two cross-node rows: the all-to-alls exposed (19.7 s a step), and run behind another
// micro-batch's compute (17.6 s).
TEST(MoeRuns, Qwen3With32WayCrossNodeExpertParallelism) {
  const MachineSpec machine = load_machine("dgx-h100", {0, 256});
  const Graph model = load_model_for_devices("qwen3-235b-a22b", 256, 2048);
  double times[2] = {0, 0};
  for (bool overlapped : {false, true}) {
    const Plan plan = optimize_plan(model, machine, qwen3_layout(overlapped));
    ASSERT_TRUE(plan.pipeline);
    const PipelinePlan& p = *plan.pipeline;
    EXPECT_EQ(p.expert_parallel, 32);
    EXPECT_EQ(p.expert_data_parallel, 1);
    EXPECT_EQ(p.ep_comm_overlap, overlapped);
    EXPECT_TRUE(p.fits);
    const double published = overlapped ? 17.6 : 19.7;  // seconds a step
    std::printf(
        "qwen3-235b-a22b TP2 EP32 PP8 VPP4%s: %.2f s predicted, %.1f s published (%+.1f%%)\n",
        overlapped ? " overlapped" : "", p.iteration_time, published,
        100 * (p.iteration_time / published - 1));
    EXPECT_NEAR(p.iteration_time / published, 1.0, 0.15);
    // The all-to-all is part of it, not all: tokens cross nodes once per node they go to.
    EXPECT_GT(p.alltoall_time, 0.1 * p.iteration_time);
    EXPECT_LT(p.alltoall_time, 0.5 * p.iteration_time);
    times[overlapped] = p.iteration_time;
  }
  EXPECT_LT(times[1], times[0]);
}

}  // namespace
}  // namespace unity
