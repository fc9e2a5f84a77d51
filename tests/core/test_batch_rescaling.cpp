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
#include "unity/core/pipeline/layer_segments.h"  // and rebatch
#include "unity/core/pipeline/segment_outputs.h"
#include "unity/core/plan/plan_optimizer.h"
#include "unity/core/zoo/model_zoo.h"

using namespace unity;

namespace {

// The target shape of the Reshape named `name` in `g`.
std::vector<std::int64_t> target_of(const Graph& g, const std::string& name) {
  for (const auto& [id, n] : g.nodes())
    if (n.op.name == name)
      return n.op.attrs.get_ints(n.op.type == OpType::Split ? "sizes" : "shape");
  ADD_FAILURE() << "no node " << name;
  return {};
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

TEST(BatchRescaling, AReshapePassesTheSamplesToTheDimThatHoldsThem) {
  // nn.MultiheadAttention's [8, 4, 32] -> [8, 4 x 4 heads, 8]: the samples are the outer factor.
  const Graph attention = sequence_first_model(4);
  const Graph two = rebatch(attention, 4, 2);
  EXPECT_EQ(target_of(two, "split_heads"), (std::vector<std::int64_t>{8, 8, 8}));
  EXPECT_EQ(target_of(two, "merge_heads"), (std::vector<std::int64_t>{8, 2, 32}));
  // A sequence-first RNN's [3, 4, 16] -> [3 x 4, 16] and back: the samples are the inner factor,
  // so [12, 50] -> [3, 4, 50] is [3, 2, 50] for 2 samples, not [2, 4, 50] (a rule taking the
  // outer factor made it [6, 4, 50]).
  Graph rnn;
  rnn.name = "sequence-first rnn";
  rnn.batch_size = 4;
  GraphBuilder b(rnn);
  auto steps = b.transpose(b.input("x", {4, 3, 16}), {1, 0, 2}, "time_major");
  auto rows = b.linear(b.reshape(steps, {12, 16}, "rows"), 50, "decoder");
  b.transpose(b.reshape(rows, {3, 4, 50}, "steps"), {1, 0, 2}, "batch_major");
  std::map<TensorRef, BatchPlace> places;
  const Graph half = rebatch(rnn, 4, 2, &places);
  EXPECT_EQ(target_of(half, "rows"), (std::vector<std::int64_t>{6, 16}));
  EXPECT_EQ(target_of(half, "steps"), (std::vector<std::int64_t>{3, 2, 50}));
  for (const auto& [id, n] : rnn.nodes())
    if (n.op.name == "decoder") {
      EXPECT_EQ(places.at({id, 0}).dim, 0);
      EXPECT_EQ(places.at({id, 0}).inner, 1);  // [3 x samples]: the innermost factor
    }
  // From one sample, [8, 1, 32] -> [8, 4, 8] does not say whether the sample is dim 0 or the
  // factor outside the heads: refused, and the planner makes the plan at the batch it needs.
  EXPECT_THROW(rebatch(sequence_first_model(1), 1, 2), ShapeError);
}

TEST(BatchRescaling, ExpandAndSplitFollowTheirInput) {
  Graph g;
  g.name = "expand-split";
  g.batch_size = 4;
  GraphBuilder b(g);
  auto x = b.input("x", {4, 8, 1});
  // Dim 0 holds the 4 samples, dim 2 is broadcast from 1: only dim 0 follows.
  b.op(OpType::Expand, {{"shape", std::vector<std::int64_t>{4, 8, 32}}}, {x}, "wide");
  b.op(OpType::Split, {{"axis", std::int64_t{0}}, {"sizes", std::vector<std::int64_t>{1, 3}}}, {x},
       "first_sample");
  const Graph eight = rebatch(g, 4, 8);
  EXPECT_EQ(target_of(eight, "wide"), (std::vector<std::int64_t>{8, 8, 32}));
  EXPECT_EQ(target_of(eight, "first_sample"), (std::vector<std::int64_t>{2, 6}));
  EXPECT_THROW(rebatch(g, 4, 2), ShapeError);  // a quarter of 2 samples
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
  // A segment's plan made for micro-batches of 2 and reused for 4 (the planner's rebatch): the
  // activation's samples are in dim 1, which the Input says. From one sample the heads' reshape
  // cannot tell where the sample goes: refused, and the planner makes that plan afresh.
  int ambiguous = 0;
  for (const Segment& s : chain.segments) {
    if (s.input_batch_dim != 1) continue;
    const Graph two = segment_graph(model, s, 2);
    const Graph four = rebatch(two, 2, 4);
    for (const auto& [id, n] : four.nodes()) {
      if (n.op.type != OpType::Input) continue;
      EXPECT_EQ(n.op.attrs.get_int("batch_dim"), 1);
      EXPECT_EQ(n.outputs[0].sizes()[1], 2 * two.node(id).outputs[0].sizes()[1]);
    }
    EXPECT_EQ(four.structural_hash(), segment_graph(model, s, 4).structural_hash());
    try {
      rebatch(segment_graph(model, s, 1), 1, 2);
    } catch (const ShapeError&) {
      ++ambiguous;
    }
  }
  EXPECT_GE(ambiguous, 1);  // the segment of split_heads at least
}

TEST(BatchRescaling, AnOperatorHoldingTheBatchInNoOneDimKeepsTheBatchWhole) {
  // [4, 6] -> [3, 8]: 4 samples of 6 become 3 rows of 8, which hold no whole samples: no other
  // batch fits, and the segments after it take the model's batch only.
  Graph g;
  g.name = "mixed";
  g.batch_size = 4;
  GraphBuilder b(g);
  auto x = b.linear(b.input("x", {4, 6}), 6, "in");
  auto r = b.relu(b.reshape(x, {3, 8}, "mix"), "act");
  b.linear(b.reshape(r, {4, 6}, "back"), 2, "out");
  EXPECT_THROW(rebatch(g, 4, 2), ShapeError);
  EXPECT_THROW(rebatch(g, 4, 8), ShapeError);
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
