// The cross-entropy as the frameworks run it, by hand: half-precision logits made fp32 and passed
// over apart (38 bytes a logit forward, 14 backward), the fp32 softmax kept for the backward
// instead of the logits; and the operator's vocabulary-parallel form (split classes, one partial
// loss per block).
#include <gtest/gtest.h>

#include "../one_device_machine.h"
#include "unity/core/cost/cost_model.h"
#include "unity/core/errors.h"
#include "unity/core/pcg/compute_dtype.h"
#include "unity/core/pcg/graph_builder.h"
#include "unity/core/pipeline/segment_profile.h"
#include "unity/core/shapes/shape_inference.h"
#include "unity/core/strategies/expert_strategies.h"
#include "unity/core/zoo/model_zoo.h"

namespace unity::cross_entropy_cost_test {
namespace {

constexpr std::int64_t kTokens = 1024, kClasses = 4096;
constexpr double kLogits = static_cast<double>(kTokens * kClasses);  // 4,194,304

struct Loss {
  Graph g;
  NodeId node = 0;
};

Loss loss_over(DataType logits_dtype) {
  Loss l;
  GraphBuilder b(l.g);
  const TensorRef x = b.input("logits", {kTokens, kClasses}, logits_dtype);
  const TensorRef y = b.input("labels", {kTokens}, DataType::Int64);
  l.node = b.softmax_cross_entropy(x, y, "loss").node;
  return l;
}

// 1 TB/s with no efficiency loss or launch latency, a fast compute peak: memory decides.
MachineSpec device() {
  return testing_machines::one_device_machine(testing_machines::ideal_device(1e15, 1e12));
}

// Labels read (8 bytes a token) and the loss written (its dtype follows the logits').
double other_bytes(DataType logits) { return kTokens * (8.0 + size_of(logits)); }

}  // namespace

TEST(CrossEntropyCost, HalfLogitsAreMadeFp32AndPassedOverApart) {
  const Loss half = loss_over(DataType::BFloat16);
  const TaskWork w = task_work(half.g, half.node);
  // The cast (2 read, 4 written), max (4), minus max (8), exp (8), sum (4), softmax (8).
  EXPECT_DOUBLE_EQ(w.bytes, 38.0 * kLogits + other_bytes(DataType::BFloat16));
  const MachineSpec m = device();
  const OpTimes t = CostModel(m).task_times(half.g, half.node, m.device(0));
  // 159,393,792 bytes at 1 TB/s: 159.39 us; the backward scales in place (8) and casts back (6).
  EXPECT_NEAR(t.forward, 159.393792e-6, 1e-12);
  EXPECT_NEAR(t.backward, t.forward * 14.0 / 38.0, 1e-12);
  EXPECT_NEAR(t.backward, 58.72e-6, 0.01e-6);
}

TEST(CrossEntropyCost, Fp32LogitsKeepTheFusedKernel) {
  // The paper's world: one pass over fp32 logits, a backward of twice the forward.
  const Loss full = loss_over(DataType::Float32);
  const TaskWork w = task_work(full.g, full.node);
  EXPECT_DOUBLE_EQ(w.bytes, 4.0 * kLogits + other_bytes(DataType::Float32));
  EXPECT_DOUBLE_EQ(w.backward_ratio, 2.0);
}

TEST(CrossEntropyCost, KeepsTheFp32SoftmaxNotTheHalfLogits) {
  const MachineSpec m = device();
  const CostModel model(m);
  const SegmentProfile half = profile_segment(loss_over(DataType::BFloat16).g, model);
  const SegmentProfile full = profile_segment(loss_over(DataType::Float32).g, model);
  EXPECT_DOUBLE_EQ(half.activations, 4.0 * kLogits);  // 16 MiB, not the logits' 8
  EXPECT_DOUBLE_EQ(full.activations, 4.0 * kLogits);
}

TEST(CrossEntropyCost, SplitClassesNeedTheVocabularyParallelForm) {
  ParallelTensorShape logits = ParallelTensorShape::serial({kTokens, kClasses}, DataType::BFloat16);
  logits.dims[1].degree = 4;
  ParallelTensorShape labels = ParallelTensorShape::serial({kTokens}, DataType::Int64);
  labels.replica = 4;
  Operator plain{OpType::SoftmaxCrossEntropy, {}, "loss"};
  EXPECT_THROW(infer_output_shapes(plain, {logits, labels}), ShapeError);
  Operator split = plain;
  split.attrs.set("vocab_parallel", std::int64_t{1});
  const auto out = infer_output_shapes(split, {logits, labels});
  // One share of the loss per block of classes, which a Reduce sums.
  EXPECT_EQ(out.at(0).replica, 4);
  EXPECT_EQ(out.at(0).dims.at(0).size, kTokens);
}

// Megatron-LM's head: the Linear split over the vocabulary feeds the vocabulary-parallel loss
// directly (the rule cross_entropy_vocab_parallel, then the Combine and Partition between them
// cancelled), so no device gathers the [tokens, vocabulary] logits.
TEST(CrossEntropyCost, MegatronsHeadFeedsTheLossWithoutGatheringItsLogits) {
  const Graph serial = zoo::build("gpt-tiny", 4);
  const ExpertStrategy tp = megatron_tensor_parallel(serial, 2);
  int losses = 0;
  for (const auto& [id, n] : tp.graph.nodes()) {
    if (n.op.type != OpType::SoftmaxCrossEntropy) continue;
    ++losses;
    ASSERT_TRUE(n.op.attrs.has("vocab_parallel"));
    EXPECT_EQ(n.op.attrs.get_int("vocab_parallel"), 1);
    const auto& logits = tp.graph.shape(n.inputs.at(0));
    EXPECT_EQ(logits.dims.back().degree, 2);
    EXPECT_EQ(tp.graph.node(n.inputs.at(0).node).op.type, OpType::Linear);
    // The loss's shares are summed by a Reduce (of one float a token), nothing else reads them.
    const auto uses = tp.graph.uses(id);
    ASSERT_EQ(uses.size(), 1u);
    EXPECT_EQ(tp.graph.node(uses.front().node).op.type, OpType::Reduce);
  }
  EXPECT_EQ(losses, 1);
  std::int64_t vocab = 0;
  for (const auto& [id, n] : serial.nodes())
    if (n.op.type == OpType::SoftmaxCrossEntropy)
      vocab = serial.shape(n.inputs.at(0)).dims.back().size;
  ASSERT_GT(vocab, 0);
  for (const auto& [id, n] : tp.graph.nodes()) {
    if (n.op.type != OpType::Combine) continue;
    EXPECT_NE(n.outputs.at(0).dims.back().size, vocab) << n.op.name << " gathers the logits";
  }
  bool applied = false;
  for (const auto& a : tp.applied) applied |= a.rule == "cross_entropy_vocab_parallel";
  EXPECT_TRUE(applied);
}

// Sequence parallelism splits what tensor parallelism leaves whole, not what it has split already:
// the vocabulary-parallel loss's per-token shares, which a Reduce completes, are not in the
// segment's whole work (they had been, and a TP t plan's loss was costed at 1/t of its time).
// With a 32,768-word vocabulary the loss outweighs every norm and residual sum of gpt-tiny's
// head segment, so whole work below the loss's own time leaves it out.
TEST(CrossEntropyCost, SequenceParallelismLeavesTheVocabularyParallelLossWhole) {
  zoo::TransformerResize r;
  r.vocab = 32768;
  const Graph serial = zoo::build("gpt-tiny", 4, r);
  const ExpertStrategy tp = megatron_tensor_parallel(serial, 2);
  const MachineSpec m = load_machine("selene", {0, 2});
  const CostModel model(m);
  const SegmentProfile s = profile_segment(tp.graph, model);
  ASSERT_TRUE(s.feasible);
  double loss = 0;
  for (const auto& [id, n] : tp.graph.nodes())
    if (n.op.type == OpType::SoftmaxCrossEntropy)
      loss = model.task_times(tp.graph, id, m.device(0)).forward;
  ASSERT_GT(loss, 0);
  EXPECT_GT(s.whole_forward, 0);  // the norms and residual sums
  EXPECT_LT(s.whole_forward, loss);
}

}  // namespace unity::cross_entropy_cost_test
