// Multi-head latent attention and DeepSeek-V3: the published parameter counts, the per-layer
// attention's parameters and work computed by hand, and Megatron's head split.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "unity/core/cost/cost_model.h"
#include "unity/core/ops/attention_core.h"
#include "unity/core/strategies/expert_strategies.h"
#include "unity/core/zoo/model_zoo.h"
#include "unity/core/zoo/transformer_models.h"

namespace unity {
namespace {

NodeId first_of(const Graph& g, OpType t) {
  for (const auto& [id, n] : g.nodes())
    if (n.op.type == t) return id;
  return -1;
}

std::int64_t weights_of(const Graph& g, NodeId id) {
  std::int64_t n = 0;
  for (const auto& in : g.node(id).inputs)
    if (g.node(in.node).op.type == OpType::Weight) n += g.shape(in).num_elements();
  return n;
}

// One layer's latent attention: 7168 x 1536 + 1536 + 1536 x (128 x 192) + 7168 x (512 + 64) +
// 512 + 512 x (128 x (128 + 128)) + (128 x 128) x 7168 = 187,107,328.
TEST(LatentAttention, DeepSeekV3LayerParameters) {
  zoo::TransformerResize r;
  r.layers = 1;
  r.seq = 16;
  const Graph g = zoo::build("deepseek-v3", 1, r);
  const NodeId mla = first_of(g, OpType::LatentAttention);
  ASSERT_GE(mla, 0);
  EXPECT_EQ(weights_of(g, mla), 7168LL * 1536 + 1536 + 1536LL * 128 * 192 + 7168LL * 576 + 512 +
                                    512LL * 128 * 256 + 128LL * 128 * 7168);
  EXPECT_EQ(weights_of(g, mla), 187107328);
}

// DeepSeek-V3 as its report publishes it: 671B parameters in all, 37B activated per token.
// Counted: 61 layers' attention and norms, 3 dense SwiGLU layers of 18,432, 58 MoE layers (router
// 7,168 x 256, 256 routed and 1 shared expert of 3 x 7,168 x 2,048), the embedding and the untied
// head: 671,026,404,352 (Hugging Face's 671,026,419,200 adds the routers' 58 x 256 score
// corrections, which the Experts operator does not hold). Active: 8 of the 256 routed experts,
// 37,552,282,624, which the report writes 37B; without the input embedding's lookup (no
// arithmetic) 36.63B: the published 37B lies between the two.
TEST(LatentAttention, DeepSeekV3PublishedCounts) {
  zoo::TransformerResize r;
  r.seq = 64;  // the counts do not depend on it
  const Graph g = zoo::build("deepseek-v3", 1, r);
  EXPECT_EQ(g.parameter_count(), 671026404352);
  EXPECT_EQ(g.active_parameter_count(), 37552282624);
  EXPECT_NEAR(static_cast<double>(g.parameter_count()), 671e9, 0.005 * 671e9);
  const double embedding = 129280.0 * 7168;
  const double active = static_cast<double>(g.active_parameter_count());
  EXPECT_NEAR(active, 37e9, 0.015 * 37e9);
  EXPECT_LT(active - embedding, 37e9);
  EXPECT_GT(active, 37e9);
  int mla = 0, experts = 0;
  for (const auto& [id, n] : g.nodes()) {
    mla += n.op.type == OpType::LatentAttention;
    experts += n.op.type == OpType::Experts;
  }
  EXPECT_EQ(mla, 61);
  EXPECT_EQ(experts, 58);
}

// deepseek-tiny's attention, batch 4 of 32 tokens (128), hidden 64, 4 heads of 16 + 8 rotary
// (queries, keys) and 16 (values), query latent 32, key/value latent 16.
TEST(LatentAttention, WorkByHand) {
  Graph g = zoo::build("deepseek-tiny", 4);
  const NodeId mla = first_of(g, OpType::LatentAttention);
  ASSERT_GE(mla, 0);
  const double t = 128;
  const double projections = 2 * t * 64 * 32           // w_dq
                             + 2 * t * 32 * (4 * 24)   // w_uq
                             + 2 * t * 64 * (16 + 8)   // w_dkv
                             + 2 * t * 16 * (4 * 32)   // w_ukv
                             + 2 * t * (4 * 16) * 64;  // w_o
  EXPECT_DOUBLE_EQ(projections, 3276800.0);
  const double norms_and_rotations = 4 * t * (32 + 16) + 3 * t * 8 * (4 + 1);
  const double scores = 2.0 * 4 * 4 * 32 * 32 * 24, context = 2.0 * 4 * 4 * 32 * 32 * 16;
  const TaskWork w = task_work(g, mla, true);
  EXPECT_DOUBLE_EQ(w.flops, projections + scores + context + norms_and_rotations);
  EXPECT_DOUBLE_EQ(w.flops, 4627456.0);
  EXPECT_DOUBLE_EQ(w.backward_ratio, 2.0);
  ASSERT_EQ(w.gemm_count, 7);
  EXPECT_DOUBLE_EQ(w.gemms[5].m, 32.0);  // the scores: [32, 32] per head and sample
  EXPECT_DOUBLE_EQ(w.gemms[5].count, 16.0);
  EXPECT_DOUBLE_EQ(w.transcendentals, 4.0 * 4 * 32 * 32);
  // Fused and causal: half the products run, the backward recomputes the scores (2.5x).
  g.mutable_node(mla).op.attrs.set("fused", std::int64_t{1});
  const TaskWork f = task_work(g, mla, true);
  const double run = (scores + context) / 2;
  EXPECT_DOUBLE_EQ(f.flops, projections + run + norms_and_rotations);
  EXPECT_DOUBLE_EQ(f.skipped_flops, run);
  EXPECT_DOUBLE_EQ(f.backward_ratio,
                   (2 * (projections + norms_and_rotations) + 2.5 * run) / f.flops);
  // The attention view the pipeline planner reads.
  const AttentionTask a = attention_task(g, g.node(mla));
  EXPECT_DOUBLE_EQ(a.core_flops(), scores + context);
  EXPECT_DOUBLE_EQ(a.projection_flops, projections);
  // Kept for the backward pass: the latents before and after their norms, the rotary key, and
  // per head q and k (24 each) and v and the context (16 each).
  EXPECT_DOUBLE_EQ(a.kept_elements, t * (2 * 32 + 2 * 16 + 8 + 4 * (2 * 24 + 2 * 16)));
}

// Megatron's tensor parallelism splits each latent attention by heads: the up projections'
// columns and w_o's rows over the group, the down projections and norms copied, the output a
// partial sum; each device's task has half the heads and half the up and output projections'
// work, all of the down projections'.
TEST(LatentAttention, MegatronTensorParallelSplitsHeads) {
  const Graph serial = zoo::build("deepseek-tiny", 4);
  const ExpertStrategy s = megatron_tensor_parallel(serial, 2);
  int split = 0;
  for (const auto& [id, n] : s.graph.nodes()) {
    if (n.op.type != OpType::LatentAttention) continue;
    EXPECT_EQ(n.outputs[0].replica, 2);
    EXPECT_EQ(s.graph.shape(n.inputs[3]).dims[1].degree, 2);  // w_uq
    EXPECT_EQ(s.graph.shape(n.inputs[1]).dims[1].degree, 1);  // w_dq copied
    EXPECT_EQ(s.graph.shape(n.inputs[1]).replica, 2);
    ++split;
  }
  EXPECT_EQ(split, 3);
  bool named = false;
  for (const auto& a : s.applied) named |= a.rule == "latent_attention_head_parallel";
  EXPECT_TRUE(named);
}

}  // namespace
}  // namespace unity
