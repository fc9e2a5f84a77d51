// Fused attention (FlashAttention, Dao et al. 2022) as the cost model prices it and as the joint
// search reaches it: the rule fuse_attention sets the kernel, the scores never pass through memory,
// a causal mask skips half the products, the backward pass recomputes the scores, and what the
// backward keeps is the softmax's log-sum-exp instead of the probabilities. Every figure by hand.
#include <gtest/gtest.h>

#include "../one_device_machine.h"
#include "unity/core/cost/cost_model.h"
#include "unity/core/errors.h"
#include "unity/core/pcg/graph_builder.h"
#include "unity/core/pipeline/segment_profile.h"
#include "unity/core/plan/plan_optimizer.h"
#include "unity/core/rules/rule.h"
#include "unity/core/search/substitution_search.h"

namespace unity::fused_attention {
namespace {

constexpr std::int64_t kBatch = 2, kSeq = 64, kHidden = 32, kHeads = 4;

struct Attention {
  Graph g;
  NodeId node = 0;
};

Attention attention(bool causal, bool fused) {
  Attention a;
  GraphBuilder b(a.g);
  TensorRef x = b.input("x", {kBatch, kSeq, kHidden});
  auto w = [&](const char* name) { return b.weight(name, {kHidden, kHidden}); };
  Attributes attrs{{"num_heads", kHeads}};
  if (causal) attrs.set("causal", std::int64_t{1});
  if (fused) attrs.set("fused", std::int64_t{1});
  a.node =
      b.op(OpType::MultiHeadAttention, attrs, {x, x, x, w("wq"), w("wk"), w("wv"), w("wo")}, "mha")
          .node;
  return a;
}

const double n = kBatch, s = kSeq, e = kHidden;
const double kProjections = 2 * n * 4 * s * e * e;  // q, k, v and o: 1,048,576
const double kScores = 2 * 2 * n * s * s * e;       // q k^T and p v: 1,048,576

TEST(FusedAttention, CausalKernelRunsHalfTheScoresAndNoneThroughMemory) {
  const Attention unfused = attention(true, false);
  const TaskWork u = task_work(unfused.g, unfused.node);
  EXPECT_DOUBLE_EQ(u.flops, kProjections + kScores);
  EXPECT_DOUBLE_EQ(u.skipped_flops, 0);
  // [2, 4 heads, 64, 64] scores of 4 bytes, four passes: 524,288 bytes.
  EXPECT_DOUBLE_EQ(u.serial_bytes, 4 * n * kHeads * s * s * 4);
  EXPECT_DOUBLE_EQ(u.backward_ratio, 2);

  const Attention fused = attention(true, true);
  const TaskWork f = task_work(fused.g, fused.node);
  EXPECT_DOUBLE_EQ(f.flops, kProjections + kScores / 2);
  EXPECT_DOUBLE_EQ(f.skipped_flops, kScores / 2);
  EXPECT_DOUBLE_EQ(f.serial_bytes, 0);
  // Backward: both gradients of each projection, and five score-sized products for two.
  EXPECT_DOUBLE_EQ(f.flops * f.backward_ratio, 2 * kProjections + 2.5 * kScores / 2);

  // Without a mask every block runs.
  const Attention full = attention(false, true);
  EXPECT_DOUBLE_EQ(task_work(full.g, full.node).flops, kProjections + kScores);
  EXPECT_DOUBLE_EQ(task_work(full.g, full.node).skipped_flops, 0);
  // Megatron-LM's count is the same for both kernels.
  EXPECT_DOUBLE_EQ(dense_forward_flops(fused.g), dense_forward_flops(unfused.g));
}

// Context parallelism: the queries in 2 blocks of 32 against all 64 keys. A task projects its
// queries and the whole keys and values, and attends 32 x 64 scores; with a causal mask the
// fused kernel is costed at the last block, which skips only its upper-left triangle: 32 (64 -
// 16) of the 32 x 64 scores, three quarters.
// A sliding window of 16 over 64 positions (Mistral's, Gemma's, gpt-oss's layers): query p sees
// min(p, 16) keys, so the fused kernel runs 16^2 / 2 + 16 x 48 = 896 of the 64 x 64 scores
// (0.21875, against the causal half), and the last block of 32 queries 16 x 32 of its 32 x 64
// (a quarter). Unfused, the whole score matrix is computed and masked either way; a window as
// long as the sequence is the causal mask.
TEST(FusedAttention, ASlidingWindowRunsOnlyTheBlocksInsideIt) {
  auto windowed = [](std::int64_t window, bool fused, bool blocks) {
    Graph g;
    GraphBuilder b(g);
    TensorRef x = b.input("x", {kBatch, kSeq, kHidden});
    auto w = [&](const char* name) {
      TensorRef weight = b.weight(name, {kHidden, kHidden});
      return blocks ? b.replicate(weight, 2) : weight;
    };
    Attributes attrs{{"num_heads", kHeads}, {"causal", std::int64_t{1}}, {"window", window}};
    if (fused) attrs.set("fused", std::int64_t{1});
    TensorRef kv = blocks ? b.replicate(x, 2) : x;
    TensorRef q = blocks ? b.partition(x, 1, 2) : x;
    const NodeId mha =
        b.op(OpType::MultiHeadAttention, attrs, {q, kv, kv, w("wq"), w("wk"), w("wv"), w("wo")},
             "mha")
            .node;
    return task_work(g, mha);
  };
  EXPECT_DOUBLE_EQ(windowed(16, true, false).flops, kProjections + 0.21875 * kScores);
  EXPECT_DOUBLE_EQ(windowed(16, true, false).skipped_flops, 0.78125 * kScores);
  EXPECT_DOUBLE_EQ(windowed(16, false, false).flops, kProjections + kScores);
  EXPECT_DOUBLE_EQ(windowed(64, true, false).flops, kProjections + 0.5 * kScores);
  const double projections = 2 * n * (s / 2 * e * e + 2 * s * e * e + s / 2 * e * e);
  EXPECT_DOUBLE_EQ(windowed(16, true, true).flops, projections + 0.25 * kScores / 2);
}

TEST(FusedAttention, QueryBlocksCostTheBusiestBlock) {
  for (const bool fused : {false, true}) {
    Graph g;
    GraphBuilder b(g);
    TensorRef x = b.input("x", {kBatch, kSeq, kHidden});
    auto w = [&](const char* name) { return b.replicate(b.weight(name, {kHidden, kHidden}), 2); };
    Attributes attrs{{"num_heads", kHeads}, {"causal", std::int64_t{1}}};
    if (fused) attrs.set("fused", std::int64_t{1});
    TensorRef kv = b.replicate(x, 2);
    const NodeId mha =
        b.op(OpType::MultiHeadAttention, attrs,
             {b.partition(x, 1, 2), kv, kv, w("wq"), w("wk"), w("wv"), w("wo")}, "mha")
            .node;
    const TaskWork t = task_work(g, mha);
    const double projections = 2 * n * (s / 2 * e * e + 2 * s * e * e + s / 2 * e * e);
    const double scores = kScores / 2;  // 32 x 64 per head
    if (fused) {
      EXPECT_DOUBLE_EQ(t.flops, projections + 0.75 * scores);
      EXPECT_DOUBLE_EQ(t.skipped_flops, 0.25 * scores);
    } else {
      EXPECT_DOUBLE_EQ(t.flops, projections + scores);
      EXPECT_DOUBLE_EQ(t.serial_bytes, 4 * n * kHeads * (s / 2) * s * 4);
    }
  }
}

TEST(FusedAttention, TimeOnADeviceByHand) {
  DeviceSpec d = testing_machines::ideal_device(1e12, 1e12);
  d.compute_efficiency = 0.5;
  d.fused_attention = true;
  const CostModel model(testing_machines::one_device_machine(d));
  const Attention unfused = attention(true, false);
  const Attention fused = attention(true, true);
  // Unfused, forward: max(2,097,152 FLOPs / 0.5 TFLOP/s, bytes / 1 TB/s) + 524,288 score bytes /
  // 1 TB/s. The inputs and output are 4 x 4,096 elements and 4 weights of 1,024, 4 bytes each.
  const double io = (4 * n * s * e + 4 * e * e) * 4 / 1e12;
  const OpTimes u = model.task_times(unfused.g, unfused.node, d);
  EXPECT_NEAR(u.forward, std::max((kProjections + kScores) / 0.5e12, io) + 524288 / 1e12, 1e-15);
  EXPECT_NEAR(u.backward, 2 * u.forward, 1e-15);
  const OpTimes f = model.task_times(fused.g, fused.node, d);
  EXPECT_NEAR(f.forward, std::max((kProjections + kScores / 2) / 0.5e12, io), 1e-15);
  EXPECT_NEAR(f.backward, (2 * kProjections + 1.25 * kScores) / 0.5e12, 1e-15);
  EXPECT_LT(f.forward + f.backward, u.forward + u.backward);
  // A device without the kernel (a V100, a CPU) runs a fused operator as the unfused kernels.
  d.fused_attention = false;
  const OpTimes fallback = model.task_times(fused.g, fused.node, d);
  EXPECT_DOUBLE_EQ(fallback.forward, u.forward);
  EXPECT_DOUBLE_EQ(fallback.backward, u.backward);
}

// With the kernel's own measured rates (an H100's cuDNN figures are 0.61 forward, 0.52
// backward): the projections stay at the GEMM rate, the products run at the kernel's. Forward:
// 1,048,576 / 0.5 + 524,288 / 0.61 TFLOP/s; backward: 2 x 1,048,576 / 0.5 + 1.25 x 1,048,576 /
// 0.52.
TEST(FusedAttention, ProductsAtTheKernelsMeasuredRates) {
  DeviceSpec d = testing_machines::ideal_device(1e12, 1e12);
  d.compute_efficiency = 0.5;
  d.fused_attention = true;
  d.fused_attention_forward_efficiency = 0.61;
  d.fused_attention_backward_efficiency = 0.52;
  const CostModel model(testing_machines::one_device_machine(d));
  const Attention fused = attention(true, true);
  const OpTimes f = model.task_times(fused.g, fused.node, d);
  EXPECT_NEAR(f.forward, kProjections / 0.5e12 + kScores / 2 / 0.61e12, 1e-15);
  EXPECT_NEAR(f.backward, 2 * kProjections / 0.5e12 + 1.25 * kScores / 0.52e12, 1e-15);
  // The unfused kernels are GEMMs and a softmax: the fused kernel's rates do not apply.
  const Attention unfused = attention(true, false);
  d.fused_attention_forward_efficiency = d.fused_attention_backward_efficiency = 0;
  const OpTimes u = model.task_times(unfused.g, unfused.node, d);
  d.fused_attention_forward_efficiency = 0.61;
  d.fused_attention_backward_efficiency = 0.52;
  const OpTimes u2 = model.task_times(unfused.g, unfused.node, d);
  EXPECT_DOUBLE_EQ(u.forward, u2.forward);
  EXPECT_DOUBLE_EQ(u.backward, u2.backward);
}

TEST(FusedAttention, KeepsTheLogSumExpInsteadOfTheProbabilities) {
  const MachineSpec one = load_machine("dgx-h100", {0, 1});
  CostModel model(one);
  model.set_counts_weight_updates(false);
  const Attention unfused = attention(true, false);
  const Attention fused = attention(true, true);
  const SegmentProfile pu = profile_segment(unfused.g, model);
  const SegmentProfile pf = profile_segment(fused.g, model);
  ASSERT_TRUE(pu.feasible && pf.feasible);
  // Probabilities [2, 4, 64, 64] against the log-sum-exp [2, 4, 64], in fp32.
  EXPECT_DOUBLE_EQ(pu.attention_internals, n * kHeads * s * s * 4);
  EXPECT_DOUBLE_EQ(pf.attention_internals, n * kHeads * s * 4);
  EXPECT_DOUBLE_EQ(pu.activations - pf.activations, n * kHeads * s * s * 4 - n * kHeads * s * 4);
  // Selective recomputation has nothing left to recompute in a fused kernel.
  EXPECT_GT(pu.attention_core, 0);
  EXPECT_EQ(pf.attention_core, 0);
}

TEST(FusedAttention, TheRuleSetsTheKernelAndKeepsTheMask) {
  const Rule* rule = default_rules().find("fuse_attention");
  ASSERT_NE(rule, nullptr);
  EXPECT_FALSE(rule->is_parallel());
  const Attention a = attention(true, false);
  std::vector<AppliedSubstitution> applied;
  const Graph g = apply_everywhere(a.g, *rule, {"fuse_attention", ""}, {}, applied);
  ASSERT_EQ(applied.size(), 1u);
  int fused = 0;
  for (const auto& [id, node] : g.nodes())
    if (node.op.type == OpType::MultiHeadAttention) {
      EXPECT_EQ(node.op.attrs.get_int("fused", 0), 1);
      EXPECT_EQ(node.op.attrs.get_int("causal", 0), 1);
      EXPECT_EQ(node.op.attrs.get_int("num_heads"), kHeads);
      ++fused;
    }
  EXPECT_EQ(fused, 1);
  // A fused attention is not fused again.
  std::vector<AppliedSubstitution> again;
  apply_everywhere(g, *rule, {"fuse_attention", ""}, {}, again);
  EXPECT_TRUE(again.empty());
}

TEST(FusedAttention, ExpertLayoutsTakeAnAlgebraicPinAndRefuseAParallelOne) {
  const MachineSpec h100 = load_machine("dgx-h100", {0, 8});
  // Long enough a sequence for the scores to matter (gpt-tiny's own is memory-bound throughout).
  const Graph model = load_model_for_devices("gpt-tiny", 8, 16, {.seq = 2048});
  OptimizeOptions o;
  o.mode = "expert";
  o.layout.tensor_parallel = 2;
  o.layout.pipeline_stages = 2;
  const Plan plain = optimize_plan(model, h100, o);
  o.pins = {"fuse_attention"};
  const Plan fused = optimize_plan(model, h100, o);
  ASSERT_EQ(fused.summary.substitutions_applied.size() - plain.summary.substitutions_applied.size(),
            2u);  // both layers' attention
  EXPECT_EQ(fused.summary.substitutions_applied[0].rule, "fuse_attention");
  EXPECT_LT(fused.summary.iteration_time_ms, plain.summary.iteration_time_ms);
  EXPECT_DOUBLE_EQ(fused.summary.model_flops_per_iteration,
                   plain.summary.model_flops_per_iteration);
  o.pins = {"self_attention_head_parallel"};
  EXPECT_THROW(optimize_plan(model, h100, o), InputError);
}

}  // namespace
}  // namespace unity::fused_attention
