// What a mixture-of-experts layer keeps for its backward pass, computed by hand: beside its inputs,
// the Experts operator keeps the routed copies of its tokens, its up projections' output and its
// activation's output (Megatron-Core's grouped MLP), in fp8 where its GEMMs read fp8.
#include <gtest/gtest.h>

#include <initializer_list>

#include "../one_device_machine.h"
#include "unity/core/cost/cost_model.h"
#include "unity/core/pcg/compute_dtype.h"
#include "unity/core/pcg/graph_builder.h"
#include "unity/core/pipeline/segment_profile.h"

namespace unity {
namespace {

constexpr std::int64_t kTokens = 64, kHidden = 32, kExperts = 8, kFfn = 16, kTopK = 2;

Graph one_experts_layer(bool gated, bool fp8) {
  Graph g;
  GraphBuilder b(g);
  const TensorRef x = b.input("x", {kTokens, kHidden});
  const TensorRef gates = b.input("gates", {kTokens, kExperts});
  b.experts(x, gates, kFfn, kTopK, "experts", gated);
  if (fp8)
    set_fp8_gemms(g);
  else
    set_compute_dtype(g, DataType::BFloat16);
  return g;
}

SegmentProfile profile(const Graph& g) {
  DeviceSpec d = testing_machines::ideal_device(1e12, 1e12);
  d.peak_flops_fp8 = 2e12;
  const MachineSpec m = testing_machines::one_device_machine(d);
  CostModel model(m);
  model.set_counts_weight_updates(false);
  return profile_segment(g, model);
}

TEST(ExpertActivations, TheGroupedMlpKeepsItsRoutedTokensAndItsUpAndActivationOutputs) {
  // The inputs: x [64, 32] and the gates [64, 8], bf16.
  const double inputs = (kTokens * kHidden + kTokens * kExperts) * 2.0;
  // 64 tokens x top 2 = 128 routed copies: 128 x 32 in, 128 x (16 + 16) out of the gate and up
  // projections, 128 x 16 out of the SwiGLU: 128 x 96 x 2 bytes = 24,576.
  const SegmentProfile swiglu = profile(one_experts_layer(true, false));
  ASSERT_TRUE(swiglu.feasible);
  EXPECT_DOUBLE_EQ(swiglu.activations, inputs + 128.0 * (32 + 32 + 16) * 2);
  // GELU experts: one up projection, 128 x 16 out of it.
  const SegmentProfile gelu = profile(one_experts_layer(false, false));
  EXPECT_DOUBLE_EQ(gelu.activations, inputs + 128.0 * (32 + 16 + 16) * 2);
  // FP8: the two GEMMs' inputs kept as they were cast, 1 byte an element; the up projections'
  // output in bf16; the operator's own inputs at 1 byte, as every fp8 GEMM operator's are.
  const SegmentProfile fp8 = profile(one_experts_layer(true, true));
  EXPECT_DOUBLE_EQ(fp8.activations, inputs / 2 + 128.0 * (32 + 16) * 1 + 128.0 * 32 * 2);
}

TEST(ExpertActivations, TaskWorkCountsTheEvenShareOfTheRoutedTokens) {
  const Graph g = one_experts_layer(true, false);
  NodeId experts = -1;
  for (const auto& [id, n] : g.nodes())
    if (n.op.type == OpType::Experts) experts = id;
  Graph loaded = g;
  // A busiest device's load runs more tokens, but what is kept is costed at the even share.
  loaded.mutable_node(experts).op.attrs.set("expert_load", 1.5);
  for (const Graph* graph : std::initializer_list<const Graph*>{&g, &loaded}) {
    const TaskWork w = task_work(*graph, experts);
    EXPECT_DOUBLE_EQ(w.expert_routed_input, 128.0 * kHidden);
    EXPECT_DOUBLE_EQ(w.expert_up_output, 128.0 * 2 * kFfn);
    EXPECT_DOUBLE_EQ(w.expert_act_output, 128.0 * kFfn);
  }
}

}  // namespace
}  // namespace unity
