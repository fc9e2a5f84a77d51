// Published mixture-of-experts runs (shared/reference/moe-runs.md) planned with their layouts
// fixed (tests/moe_runs.h): Qwen3-235B-A22B on 256 H100 and DeepSeek-V3 on 1,024. The intra-node
// Qwen row waits for its 94 layers on 32 stages of 3 chunks (the embedding and the loss counted
// as layers).
#include <gtest/gtest.h>

#include "../moe_runs.h"

namespace unity {
namespace {

// The two cross-node rows: the all-to-alls exposed (19.7 s a step), and run behind another
// micro-batch's compute (17.6 s).
TEST(MoeRuns, Qwen3With32WayCrossNodeExpertParallelism) {
  const MachineSpec machine = load_machine("dgx-h100", {0, 256});
  const Graph model = moe::qwen3_model();
  double times[2] = {0, 0};
  for (bool overlapped : {false, true}) {
    const Plan plan = optimize_plan(model, machine, moe::qwen3_layout(overlapped));
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

// DeepSeek-V3's published layout on Megatron-Core's stack as NeMo runs it (DeepEP, the latent
// attention and the attention fused, sequence parallelism with TP overlap, the distributed
// optimizer; recomputation not stated, none taken), compared by tokens a second per GPU: NeMo's
// TFLOP/s count differs from Megatron-LM's, the step time does not.
TEST(MoeRuns, DeepSeekV3On1024H100) {
  const MachineSpec machine = load_machine("dgx-h100", {0, 1024});
  const Plan plan = optimize_plan(moe::deepseek_v3_model(), machine, moe::deepseek_v3_layout());
  ASSERT_TRUE(plan.pipeline);
  const PipelinePlan& p = *plan.pipeline;
  EXPECT_EQ(p.expert_parallel, 64);
  EXPECT_EQ(p.data_parallel, 64);
  EXPECT_EQ(p.expert_data_parallel, 2);
  EXPECT_EQ(plan.summary.dtype, "fp8");
  EXPECT_TRUE(p.fits) << p.peak_memory / double(1 << 30);
  const double tokens_per_gpu = 8192.0 * 4096 / p.iteration_time / 1024;
  const double published = moe::kDeepSeekV3TokensPerGpu;
  std::printf(
      "deepseek-v3 TP2 PP8 VP4 EP64 fp8: %.0f tokens/s per GPU predicted, %.0f published "
      "(%+.1f%%), %.1f s a step\n",
      tokens_per_gpu, published, 100 * (tokens_per_gpu / published - 1), p.iteration_time);
  EXPECT_NEAR(tokens_per_gpu / published, 1.0, 0.15);
}

}  // namespace
}  // namespace unity
