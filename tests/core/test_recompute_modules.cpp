// Selective recomputation by module (Megatron-Core's --recompute-modules): what each module runs
// again and drops, by hand on a normalisation feeding a mixture-of-experts layer, and how a
// planned pipeline pays for them (the moe module's all-to-alls sent again).
#include <gtest/gtest.h>

#include "../one_device_machine.h"
#include "small_moe.h"
#include "unity/core/cost/cost_model.h"
#include "unity/core/errors.h"
#include "unity/core/machine/machine_spec.h"
#include "unity/core/pcg/compute_dtype.h"
#include "unity/core/pcg/graph_builder.h"
#include "unity/core/pipeline/pipeline_planner.h"
#include "unity/core/pipeline/recompute_modules.h"
#include "unity/core/pipeline/segment_profile.h"
#include "unity/core/plan/plan_optimizer.h"

namespace unity {
namespace {

constexpr std::int64_t kTokens = 64, kHidden = 32, kExperts = 8, kFfn = 16, kTopK = 2;

// x [64, 32] -> RMSNorm -> a softmax router and SwiGLU experts over the norm's output.
Graph norm_and_moe() {
  Graph g;
  GraphBuilder b(g);
  const TensorRef x = b.input("x", {kTokens, kHidden});
  const TensorRef h = b.rms_norm(x, "norm");
  const TensorRef gates = b.moe_router(h, kExperts, kTopK, "router");
  b.experts(h, gates, kFfn, kTopK, "experts");
  set_compute_dtype(g, DataType::BFloat16);
  return g;
}

TEST(RecomputeModules, WhatEachModuleRunsAgainAndDropsByHand) {
  const MachineSpec m =
      testing_machines::one_device_machine(testing_machines::ideal_device(1e12, 1e12));
  CostModel model(m);
  model.set_counts_weight_updates(false);
  const SegmentProfile p = profile_segment(norm_and_moe(), model);
  ASSERT_TRUE(p.feasible);
  const double token_row = kTokens * kHidden * 2.0;  // [64, 32] in bf16
  // layernorm: the norm's output, read by the router and the experts, kept once.
  EXPECT_DOUBLE_EQ(p.norm_outputs, token_row);
  EXPECT_GT(p.norm_forward, 0);
  // moe_act: 128 routed copies x 16 of SwiGLU output; its pass reads the gate and up outputs
  // (128 x 32) and writes it: 128 x 48 x 2 bytes at 1 TB/s.
  EXPECT_DOUBLE_EQ(p.expert_act_outputs, 128.0 * kFfn * 2);
  EXPECT_DOUBLE_EQ(p.expert_act_forward, 128.0 * 48 * 2 / 1e12);
  // moe: everything kept but the layer's input and what made it (x, kept by the norm, and the
  // norm's output); its forward is every operator's but the norm's.
  EXPECT_DOUBLE_EQ(p.moe_internals, p.activations - 2 * token_row);
  EXPECT_GT(p.moe_internals, 128.0 * (32 + 32 + 16) * 2);  // the experts' and the router's
  EXPECT_NEAR(p.moe_forward, p.forward - p.norm_forward, 1e-18);
}

TEST(RecomputeModules, NamesParseAndPrintInMegatronsOrder) {
  EXPECT_EQ(to_string(recompute_modules_from_string("moe_act, layernorm")), "layernorm,moe_act");
  EXPECT_EQ(to_string(recompute_modules_from_string("moe layernorm")), "layernorm,moe");
  EXPECT_TRUE(recompute_modules_from_string("core_attn").is_default());
  EXPECT_EQ(describe_recompute(Recompute::Selective, recompute_modules_from_string("core_attn")),
            "selective");
  EXPECT_EQ(describe_recompute(Recompute::Selective, recompute_modules_from_string("moe")),
            "selective (moe)");
  try {
    recompute_modules_from_string("layernorm,mlp_act");
    FAIL() << "an unknown module was taken";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("'mlp_act'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("moe_act"), std::string::npos) << e.what();
  }
  EXPECT_THROW(recompute_modules_from_string(" , "), InputError);
}

// The small decoder on 2 DGX H100 nodes with EP 8 (all-to-all): the moe module sends each
// micro-batch's dispatch and combine again in the backward pass; the others do not; each
// module keeps less than none and runs longer.
TEST(RecomputeModules, APlannedPipelinePaysForEachModule) {
  const MachineSpec machine = load_machine("dgx-h100", {0, 16});
  const Graph g = testing::small_moe();
  auto plan = [&](Recompute r, unsigned modules) {
    PipelineOptions o = testing::small_moe_layout(8, TokenDispatcher::AllToAll, 0);
    o.request.recompute = r;
    if (modules) o.request.recompute_modules.bits = modules;
    auto p = plan_pipeline(g, machine, o);
    EXPECT_TRUE(p);
    return *p;
  };
  const PipelinePlan none = plan(Recompute::None, 0);
  const PipelinePlan norm_act =
      plan(Recompute::Selective, RecomputeModules::kLayerNorm | RecomputeModules::kMoeActivation);
  const PipelinePlan moe = plan(Recompute::Selective, RecomputeModules::kMoe);
  EXPECT_EQ(norm_act.recompute_modules.bits,
            RecomputeModules::kLayerNorm | RecomputeModules::kMoeActivation);
  EXPECT_TRUE(none.recompute_modules.is_default());
  for (std::size_t c = 0; c < none.chunks.size(); ++c) {
    const ChunkExchanges& n = none.chunks[c].exchanges;
    ASSERT_GT(n.alltoall.forward, 0);
    EXPECT_DOUBLE_EQ(n.alltoall.backward, n.alltoall.forward);
    EXPECT_DOUBLE_EQ(norm_act.chunks[c].exchanges.alltoall.backward, n.alltoall.forward);
    EXPECT_DOUBLE_EQ(moe.chunks[c].exchanges.alltoall.backward, 2 * n.alltoall.forward);
    EXPECT_GT(norm_act.chunks[c].backward, none.chunks[c].backward);
    EXPECT_GT(moe.chunks[c].backward, norm_act.chunks[c].backward);
  }
  EXPECT_LT(norm_act.peak_memory, none.peak_memory);
  EXPECT_LT(moe.peak_memory, norm_act.peak_memory);
}

// The joint search chooses the modules itself for a model with experts: Qwen3-30B-A3B at 8,192
// tokens on 16 H100s with one device a replica, where nothing fits without recomputation and
// recomputing the norms and the experts' activation is cheaper than whole layers.
TEST(RecomputeModules, TheJointSearchChoosesThem) {
  const MachineSpec machine = load_machine("dgx-h100", {0, 16});
  zoo::TransformerResize seq;
  seq.seq = 8192;
  const Graph g = load_model_for_devices("qwen3-30b-a3b", 16, 64, seq);
  PipelineOptions o;
  o.joint = true;
  o.request.tensor_parallel = 1;
  o.request.pipeline_stages = 1;
  o.request.context_parallel = 1;
  const auto plan = plan_pipeline(g, machine, o);
  ASSERT_TRUE(plan);
  EXPECT_TRUE(plan->fits);
  EXPECT_EQ(plan->recompute, Recompute::Selective);
  EXPECT_EQ(plan->recompute_modules.bits,
            RecomputeModules::kLayerNorm | RecomputeModules::kMoeActivation);
  // Every recomputation level without the modules is slower or does not fit.
  for (const Recompute r : {Recompute::None, Recompute::Selective, Recompute::Full}) {
    PipelineOptions fixed = o;
    fixed.request.recompute = r;
    const auto other = plan_pipeline(g, machine, fixed);
    ASSERT_TRUE(other);
    EXPECT_TRUE(!other->fits || other->iteration_time > plan->iteration_time)
        << to_string(r) << ": " << other->iteration_time << " s";
  }
}

}  // namespace
}  // namespace unity
