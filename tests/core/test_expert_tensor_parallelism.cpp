// Expert tensor parallelism (Megatron-Core's --expert-tensor-parallel-size) in the pipeline
// planner: each expert's FFN split over the replica's tp devices as a dense MLP's, expert
// parallelism then spreading the experts over data-parallel copies. Its all-to-all, its slices'
// exchange of the routed tokens and the expert weights a device holds, computed by hand; what it
// refuses; and the joint search taking it where a model's few experts cannot be spread further.
#include <algorithm>
#include <string>

#include <gtest/gtest.h>

#include "small_moe.h"
#include "unity/core/errors.h"
#include "unity/core/machine/machine_spec.h"
#include "unity/core/pipeline/pipeline_planner.h"
#include "unity/core/pipeline/token_dispatch.h"
#include "unity/core/zoo/model_zoo.h"
#include "unity/core/zoo/transformer_models.h"

namespace unity {
namespace {

using testing::small_moe;

// small_moe (4 layers of 16 experts of 256, top 2, batch 32 of 128 tokens, bf16) on 2 DGX H100
// nodes: tp 2, pp 2, dp 4, 2 micro-batches of 4 samples, the experts `etp` x `ep`.
PipelineOptions sliced(int etp, int ep, TokenDispatcher dispatcher = TokenDispatcher::AllToAll) {
  PipelineOptions o = testing::small_moe_layout(ep, dispatcher, 0);
  o.request.tensor_parallel = 2;
  o.request.expert_tensor_parallel = etp;
  return o;
}

bool throws_saying(const Graph& g, const MachineSpec& m, const PipelineOptions& o,
                   const std::string& words) {
  try {
    plan_pipeline(g, m, o);
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    return true;
  }
  return false;
}

TEST(ExpertTensorParallelism, AllToAllAndSliceExchangeByHand) {
  const MachineSpec m = load_machine("dgx-h100", {0, 16});
  const auto plan = plan_pipeline(small_moe(), m, sliced(2, 4));
  ASSERT_TRUE(plan);
  // tp 2 x dp 4 = 8 devices a stage = etp 2 x ep 4 x edp 1.
  EXPECT_EQ(plan->expert_tensor_parallel, 2);
  EXPECT_EQ(plan->expert_parallel, 4);
  EXPECT_EQ(plan->expert_data_parallel, 1);
  // The MoE layers' replica plan splits each expert by width.
  EXPECT_TRUE(std::any_of(
      plan->segment_plans.begin(), plan->segment_plans.end(),
      [](const std::string& d) { return d.find("experts split by width") != std::string::npos; }));
  const LinkSpec& nvlink = m.link(0, 1);
  // The all-to-all: the devices of one tensor-parallel rank in 4 copies (0, 2, 4, 6: one node),
  // each sending its 1/tp of a micro-batch's 4 x 128 tokens (256 x 256 bf16 values), a copy per
  // picked expert, 2 of every 4 to each other device; a receiver takes its 3 over NVLink.
  const double message = 256 * 256 * 2.0;
  const double pair = message * 2 / 4;
  const double one = 3 * pair / nvlink.bandwidth + nvlink.latency;
  // Dispatch and combine forward and backward, 2 MoE layers a rank, 2 micro-batches.
  EXPECT_NEAR(plan->alltoall_time, 4 * one * 2 * 2, 1e-12);
  // The slices: the two of an expert gather the routed copies they received (top 2 a token:
  // 2 x 4 x 128 x 256 bf16 values) and reduce-scatter the outputs, an all-reduce's traffic on
  // the pair's NVLink ring (bytes / bandwidth + 2 latencies), where the replica's plan costs it
  // on one copy a token: (2 - 1) x 262,144 bytes more a pass, forward and backward.
  const double dense = 4 * 128 * 256 * 2.0;
  EXPECT_NEAR(plan->expert_slice_time, dense / nvlink.bandwidth * 2 * 2 * 2, 1e-12);
}

// A device holds 1/(ep x etp) of a rank's experts: etp 2 x ep 4 as much as etp 1 x ep 8, and
// 3/8 of the experts less than the replica's own split by expert (1/2 each, etp 1 x ep 1).
TEST(ExpertTensorParallelism, ExpertWeightsPerDevice) {
  const MachineSpec m = load_machine("dgx-h100", {0, 16});
  const Graph g = small_moe();
  const auto slices = plan_pipeline(g, m, sliced(2, 4));
  const auto spread = plan_pipeline(g, m, sliced(1, 8));
  const auto replica = plan_pipeline(g, m, sliced(1, 1));
  ASSERT_TRUE(slices && spread && replica);
  EXPECT_NEAR(slices->rank_memory[0].weights, spread->rank_memory[0].weights, 1);
  const double experts_per_rank = 2 * 16 * 3.0 * 256 * 256;  // 2 layers, 16 SwiGLU experts
  EXPECT_NEAR(replica->rank_memory[0].weights - slices->rank_memory[0].weights,
              experts_per_rank * (1.0 / 2 - 1.0 / 8) * 2, 1);
  // Without expert parallelism each device holds half of every expert: as the split by expert.
  const auto halves = plan_pipeline(g, m, sliced(2, 1));
  ASSERT_TRUE(halves);
  EXPECT_NEAR(halves->rank_memory[0].weights, replica->rank_memory[0].weights, 1);
  EXPECT_EQ(halves->expert_data_parallel, 4);
  EXPECT_DOUBLE_EQ(halves->alltoall_time, 0);
  EXPECT_DOUBLE_EQ(halves->expert_slice_time, 0);
}

TEST(ExpertTensorParallelism, RefusesWhatItDoesNotPlan) {
  const MachineSpec m = load_machine("dgx-h100", {0, 16});
  const Graph g = small_moe();
  EXPECT_TRUE(throws_saying(g, m, sliced(4, 1),
                            "--etp 4: Unity plans expert tensor parallelism "
                            "of 1 or --tp (2)"));
  // Over copies, expert parallelism divides them: 8 does not divide dp 4.
  EXPECT_TRUE(throws_saying(g, m, sliced(2, 8), "divides the 4 copies"));
  EXPECT_TRUE(throws_saying(g, m, sliced(2, 4, TokenDispatcher::DeepEp),
                            "with --etp > 1 Unity plans Megatron-Core's all-to-all dispatcher"));
  zoo::TransformerSizes dense{4, 256, 4, 4, 512, 128, 1024};
  EXPECT_TRUE(throws_saying(zoo::build_llama(32, dense), m, sliced(2, 1),
                            "has no mixture-of-experts layers"));
}

// Mixtral 8x22B on 64 H100s with tp 2 and 2 stages: its 8 experts cannot spread over more than
// 8 devices whole, so with etp 1 a device holds an eighth of them and needs recomputation and
// ZeRO 2 to fit; split by width too (etp 2 x ep 8) it holds a sixteenth. The search takes it.
TEST(ExpertTensorParallelism, TheJointSearchSplitsFewExpertsByWidth) {
  const MachineSpec m = load_machine("dgx-h100", {0, 64});
  const Graph g = zoo::build("mixtral-8x22b", 256);
  PipelineOptions o;
  o.joint = true;
  o.request.tensor_parallel = 2;
  o.request.pipeline_stages = 2;
  const auto plan = plan_pipeline(g, m, o);
  ASSERT_TRUE(plan);
  EXPECT_TRUE(plan->fits);
  EXPECT_EQ(plan->expert_tensor_parallel, 2);
  PipelineOptions whole = o;
  whole.request.expert_tensor_parallel = 1;
  const auto without = plan_pipeline(g, m, whole);
  ASSERT_TRUE(without);
  EXPECT_EQ(without->expert_tensor_parallel, 1);
  EXPECT_TRUE(!without->fits || without->iteration_time > plan->iteration_time);
}

}  // namespace
}  // namespace unity
