// A model imported for one batch, run on another: a micro-batch, a data-parallel copy's share.
// Importers resolve every size against the batch given, so operators hold it (nn.MultiheadAttention
// reshapes [sequence, batch, embed] to [sequence, batch x heads, head_dim]); the segments a
// pipeline stage runs, and the plans made for one micro-batch size and reused for another, follow
// the samples wherever they are. And what a segment's plan hands on to the next is one tensor,
// whole on one device.
#include <gtest/gtest.h>

#include "unity/core/errors.h"
#include "unity/core/machine/machine_spec.h"
#include "unity/core/pcg/graph_builder.h"
#include "unity/core/pipeline/layer_segments.h"
#include "unity/core/pipeline/segment_outputs.h"
#include "unity/core/plan/plan_optimizer.h"
#include "unity/core/shapes/batch_rescaling.h"
#include "unity/core/zoo/model_zoo.h"

using namespace unity;

namespace {

Operator reshape_to(const std::vector<std::int64_t>& shape) {
  Operator op{OpType::Reshape, {}, "r"};
  op.attrs.set("shape", shape);
  return op;
}

std::vector<std::int64_t> shape_after(const Operator& op, const std::vector<std::int64_t>& was,
                                      const std::vector<std::int64_t>& is) {
  return rebatched_operator(op, {ParallelTensorShape::serial(was, DataType::Float32)},
                            {ParallelTensorShape::serial(is, DataType::Float32)})
      .attrs.get_ints("shape");
}

// [sequence 8, batch, 32] -> [8, batch x 4 heads, 8] -> [8, batch, 32], between two Linears:
// nn.MultiheadAttention's layout, the batch in dim 1.
Graph sequence_first_model(std::int64_t batch) {
  Graph g;
  g.name = "sequence-first";
  g.batch_size = batch;
  GraphBuilder b(g);
  auto x = b.linear(b.input("x", {batch, 8, 32}), 32, "in");
  auto t = b.transpose(x, {1, 0, 2}, "to_sequence_first");
  auto heads = b.relu(b.reshape(t, {8, batch * 4, 8}, "split_heads"), "act");
  auto merged = b.reshape(heads, {8, batch, 32}, "merge_heads");
  b.linear(b.transpose(merged, {1, 0, 2}, "to_batch_first"), 16, "out");
  return g;
}

}  // namespace

TEST(BatchRescaling, AReshapePassesTheBatchToTheDimThatHoldsIt) {
  // The batch merged outermost with the heads: [8, 4, 32] -> [8, 16, 8] at batch 2 is [8, 8, 8].
  EXPECT_EQ(shape_after(reshape_to({8, 16, 8}), {8, 4, 32}, {8, 2, 32}),
            (std::vector<std::int64_t>{8, 8, 8}));
  // From a batch of one, where [8, 1, 32] groups with [8, 4, 8] either way: where its block of
  // elements ends says dim 1 (the groups would have said dim 0: [16, 4, 8]).
  EXPECT_EQ(shape_after(reshape_to({8, 4, 8}), {8, 1, 32}, {8, 2, 32}),
            (std::vector<std::int64_t>{8, 8, 8}));
  // Tokens of the batch flattened, then split again: [32] -> [4, 8] for 16 tokens is [2, 8].
  EXPECT_EQ(shape_after(reshape_to({4, 8}), {32}, {16}), (std::vector<std::int64_t>{2, 8}));
  // Nothing changed, nothing to do.
  EXPECT_EQ(shape_after(reshape_to({8, 16, 8}), {8, 4, 32}, {8, 4, 32}),
            (std::vector<std::int64_t>{8, 16, 8}));
  // No output dim holds dim 1's block: [4, 6] -> [3, 8] cannot take a batch of 2 rows.
  EXPECT_THROW(shape_after(reshape_to({3, 8}), {4, 6}, {2, 6}), ShapeError);
}

TEST(BatchRescaling, ExpandAndSplitFollowTheirInput) {
  Operator expand{OpType::Expand, {}, "e"};
  expand.attrs.set("shape", std::vector<std::int64_t>{4, 8, 32});
  // Dim 0 is the input's own (4 samples), dim 2 broadcast from 1: only dim 0 follows.
  const Operator e = rebatched_operator(expand, {ParallelTensorShape::serial({4, 8, 1})},
                                        {ParallelTensorShape::serial({2, 8, 1})});
  EXPECT_EQ(e.attrs.get_ints("shape"), (std::vector<std::int64_t>{2, 8, 32}));
  Operator split{OpType::Split, {}, "s"};
  split.attrs.set("axis", std::int64_t{1});
  split.attrs.set("sizes", std::vector<std::int64_t>{8, 8, 16});  // along batch x heads
  const Operator s = rebatched_operator(split, {ParallelTensorShape::serial({8, 32, 8})},
                                        {ParallelTensorShape::serial({8, 16, 8})});
  EXPECT_EQ(s.attrs.get_ints("sizes"), (std::vector<std::int64_t>{4, 4, 8}));
  // 6 of 32 rows: the halves of 8 are 1.5.
  EXPECT_THROW(rebatched_operator(split, {ParallelTensorShape::serial({8, 32, 8})},
                                  {ParallelTensorShape::serial({8, 6, 8})}),
               ShapeError);
}

TEST(BatchRescaling, SegmentsKnowWhereTheirActivationHoldsTheSamples) {
  const Graph model = sequence_first_model(4);
  const SegmentChain chain = segment_chain(model);
  // The segment reading the transposed activation [8, 4, 32] holds the samples in dim 1, the
  // one reading [8, 16, 8] in dim 1 too (merged with the heads), the rest in dim 0.
  int sequence_first = 0;
  for (const Segment& s : chain.segments) {
    if (s.input.node < 0) continue;
    const auto sizes = model.shape(s.input).sizes();
    EXPECT_EQ(s.input_batch_dim, sizes[0] == 8 ? 1 : 0) << model.describe(s.input.node);
    if (sizes[0] == 8) ++sequence_first;
    // Each runs for a micro-batch of 2 (and of 1) with its reshapes following.
    for (std::int64_t b : {2, 1}) {
      const Graph g = segment_graph(model, s, b);
      EXPECT_NO_THROW(g.validate());
      for (const auto& [id, n] : g.nodes()) {
        if (n.op.type != OpType::Reshape) continue;
        const auto target = n.op.attrs.get_ints("shape");
        EXPECT_EQ(target[1], n.op.name == "split_heads" ? 4 * b : b) << n.op.name;
      }
    }
  }
  EXPECT_GE(sequence_first, 2);
  // A segment's plan made for micro-batches of 1 and reused for 2 (the planner's rebatch): the
  // activation's samples are in dim 1, which the Input says.
  for (const Segment& s : chain.segments) {
    if (s.input_batch_dim != 1) continue;
    const Graph one = segment_graph(model, s, 1);
    const Graph two = rebatch(one, 1, 2);
    for (const auto& [id, n] : two.nodes()) {
      if (n.op.type != OpType::Input) continue;
      EXPECT_EQ(n.op.attrs.get_int("batch_dim"), 1);
      EXPECT_EQ(n.outputs[0].sizes()[1], 2 * one.node(id).outputs[0].sizes()[1]);
    }
    EXPECT_EQ(two.structural_hash(), segment_graph(model, s, 2).structural_hash());
  }
}

TEST(BatchRescaling, AnOperatorHoldingTheBatchInNoOneDimKeepsTheBatchWhole) {
  // [4, 6] -> [3, 8]: 4 samples of 6 become 3 rows of 8; 2 samples are 1.5 rows, so a micro-batch
  // of 2 does not fit (8 samples do: 6 rows).
  Graph g;
  g.name = "mixed";
  g.batch_size = 4;
  GraphBuilder b(g);
  auto x = b.linear(b.input("x", {4, 6}), 6, "in");
  auto r = b.relu(b.reshape(x, {3, 8}, "mix"), "act");
  b.linear(b.reshape(r, {4, 6}, "back"), 2, "out");
  EXPECT_THROW(rebatch(g, 4, 2), ShapeError);
  EXPECT_NO_THROW(rebatch(g, 4, 8));
  const SegmentChain chain = segment_chain(g);
  bool refused = false;
  for (const Segment& s : chain.segments) {
    EXPECT_NO_THROW(segment_graph(g, s, 4));  // its own batch always
    try {
      segment_graph(g, s, 2);
    } catch (const ShapeError&) {
      refused = true;
    }
  }
  EXPECT_TRUE(refused);
}

TEST(SegmentOutputs, APlanHandsOnOneTensorWholeOnOneDevice) {
  // A segment's plan split by features over 2 devices, its output left split: a Combine is added.
  Graph model;
  model.batch_size = 8;
  GraphBuilder m(model);
  m.linear(m.relu(m.input("x", {8, 16}), "act"), 4, "head");
  Graph plan;
  plan.batch_size = 8;
  GraphBuilder p(plan);
  auto out = p.relu(p.partition(p.input("x", {8, 16}), 1, 2, "x.split"), "act");
  const auto handed = handed_on_outputs(plan, model);
  ASSERT_EQ(handed.size(), 1u);
  EXPECT_EQ(handed[0], out);
  hand_on_whole(plan, model);
  const auto whole = handed_on_outputs(plan, model);
  ASSERT_EQ(whole.size(), 1u);
  EXPECT_EQ(plan.node(whole[0].node).op.type, OpType::Combine);
  EXPECT_EQ(plan.shape(whole[0]).degrees(), (std::vector<int>{1, 1}));
  // An output the model reads nowhere (an unrolled LSTM's first forget gate) is not handed on.
  const Attributes halves{{"axis", std::int64_t{1}}, {"sizes", std::vector<std::int64_t>{8, 8}}};
  Graph lstm;
  lstm.batch_size = 8;
  GraphBuilder l(lstm);
  l.linear(l.relu(l.op(OpType::Split, halves, {l.input("x", {8, 16})}, "gates"), "act"), 4, "head");
  Graph segment;  // its segment before the head: the Split's second half read by no one
  segment.batch_size = 8;
  GraphBuilder s(segment);
  s.relu(s.op(OpType::Split, halves, {s.input("x", {8, 16})}, "gates"), "act");
  ASSERT_EQ(segment.sinks().size(), 2u);
  const auto from_segment = handed_on_outputs(segment, lstm);
  ASSERT_EQ(from_segment.size(), 1u);
  EXPECT_EQ(segment.node(from_segment[0].node).op.name, "act");
}

TEST(PipelineLayouts, AModelWithoutRepeatedBlocksDealsEveryStageALayer) {
  // mnist-mlp's three Linears are three kinds, none repeated: before, every segment was dealt to
  // the first stage and the second was empty (a crash).
  const Graph model = zoo::build("mnist-mlp");
  OptimizeOptions o;
  o.mode = "expert";
  o.layout.tensor_parallel = 1;
  o.layout.pipeline_stages = 2;
  const Plan plan = optimize_plan(model, load_machine("cpu-local", {0, 2}), o);
  ASSERT_TRUE(plan.pipeline);
  ASSERT_EQ(plan.pipeline->chunks.size(), 2u);
  EXPECT_LE(plan.pipeline->chunks[0].first_segment, plan.pipeline->chunks[0].last_segment);
  EXPECT_EQ(plan.pipeline->chunks[1].first_segment, plan.pipeline->chunks[0].last_segment + 1);
  EXPECT_LE(plan.pipeline->chunks[1].first_segment, plan.pipeline->chunks[1].last_segment);
}

TEST(PipelineLayouts, ABatchNormKeepsTheBatchWhole) {
  Graph model;
  model.name = "norm";
  model.batch_size = 8;
  GraphBuilder b(model);
  auto x = b.linear(b.input("x", {8, 16}), 16, "fc");
  b.linear(b.batch_norm(x, "bn", true), 4, "head");
  OptimizeOptions o;
  o.mode = "expert";
  o.layout.tensor_parallel = 1;
  o.layout.pipeline_stages = 1;
  try {
    optimize_plan(model, load_machine("cpu-local", {0, 2}), o);
    FAIL() << "2 data-parallel copies of a BatchNorm planned";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("normalises over the whole batch"), std::string::npos)
        << e.what();
  }
  o.layout.pipeline_stages = 2;
  o.layout.micro_batches = 2;
  EXPECT_THROW(optimize_plan(model, load_machine("cpu-local", {0, 2}), o), InputError);
  o.layout.micro_batches = 0;
  const Plan pipelined = optimize_plan(model, load_machine("cpu-local", {0, 2}), o);
  ASSERT_TRUE(pipelined.pipeline);
  EXPECT_EQ(pipelined.pipeline->micro_batches, 1);
  EXPECT_EQ(pipelined.pipeline->micro_batch_size, 8);
}
