// A segment plan split by sequence for the executor (context_parallel_plan.h): a decoder layer's
// attention half on one tensor-parallel device made two sequence shards, checked node by node,
// and the operators that read across positions refused by name.
#include <gtest/gtest.h>

#include "unity/core/errors.h"
#include "unity/core/mapping/mapping_cost.h"
#include "unity/core/pcg/graph_builder.h"
#include "unity/core/pipeline/context_parallel_plan.h"

namespace unity {
namespace {

// x [2, 8, 4] -> RMS norm -> causal rotary attention (2 heads) -> residual add.
Graph attention_half(bool pool_over_sequence = false) {
  Graph g;
  GraphBuilder b(g);
  const TensorRef x = b.input("x", {2, 8, 4});
  const TensorRef h = b.rms_norm(x, "norm");
  const TensorRef a =
      b.multi_head_attention(h, h, h, 2, "attention", {.rotary = true, .causal = true});
  TensorRef y = b.add(x, a, "residual");
  if (pool_over_sequence) y = b.reduce_mean(y, {1}, false, "pool");
  return g;
}

// Every placed operator on device 0, as a replica of one device plans it.
std::map<NodeId, MachineView> one_device(const Graph& g) {
  std::map<NodeId, MachineView> views;
  const PlacementGraph placement(g);
  for (NodeId id : placement.placed()) views[id] = MachineView{};
  return views;
}

const Node& named(const Graph& g, const std::string& name) {
  for (const auto& [id, n] : g.nodes())
    if (n.op.name == name) return n;
  throw std::runtime_error("no node " + name);
}

TEST(ContextParallelPlan, AttentionHalfOnTwoSequenceShards) {
  const Graph serial = attention_half();
  EXPECT_EQ(attention_sequence(serial), 8);
  const ContextParallelPlan split = context_parallel_plan(serial, one_device(serial), 1, 2, 8);
  const Graph& g = split.pcg;
  // The input read in halves of the sequence: [2, 8/2, 4].
  const Node& x = named(g, "x");
  const auto uses = g.uses(x.id);
  ASSERT_EQ(uses.size(), 1u);
  const Node& part = g.node(uses[0].node);
  EXPECT_EQ(part.op.type, OpType::Partition);
  EXPECT_EQ(part.outputs[0].to_string(), "[2, 8/2, 4] float32");
  // The norm, the attention's queries and output and the residual on each shard's 4 positions,
  // shard c on device c.
  for (const char* name : {"norm", "attention", "residual"}) {
    const Node& n = named(g, name);
    EXPECT_EQ(n.outputs[0].dims[1].degree, 2) << name;
    EXPECT_EQ(split.views.at(n.id).extents, (std::vector<int>{2})) << name;
    EXPECT_EQ(split.views.at(n.id).strides, (std::vector<int>{1})) << name;
  }
  const Node& attention = named(g, "attention");
  EXPECT_EQ(g.shape(attention.inputs[0]).dims[1].degree, 2);
  // Keys and values: the norm's output gathered whole (a Combine along the sequence) and copied
  // to both shards.
  for (int slot : {1, 2}) {
    const Node& copies = g.node(attention.inputs[slot].node);
    EXPECT_EQ(copies.op.type, OpType::Replicate);
    EXPECT_EQ(copies.outputs[0].to_string(), "[2, 8, 4] r2 float32");
    EXPECT_EQ(split.views.at(copies.id).extents, (std::vector<int>{2}));
    const Node& gather = g.node(copies.inputs[0].node);
    EXPECT_EQ(gather.op.type, OpType::Combine);
    EXPECT_EQ(gather.op.attrs.get_int("dim"), 1);
  }
  // Weights copied onto both shards (their gradients summed over them).
  for (int slot = 3; slot < 7; ++slot) {
    const Node& copy = g.node(attention.inputs[slot].node);
    EXPECT_EQ(copy.op.type, OpType::Replicate);
    EXPECT_EQ(g.node(copy.inputs[0].node).op.type, OpType::Weight);
    EXPECT_EQ(copy.outputs[0].replica, 2);
  }
  // The segment's output gathered whole on device 0 for the next stage.
  const auto sinks = g.sinks();
  ASSERT_EQ(sinks.size(), 1u);
  const Node& out = g.node(sinks[0].node);
  EXPECT_EQ(out.op.type, OpType::Combine);
  EXPECT_TRUE(out.outputs[0].is_serial());
  EXPECT_EQ(split.views.at(out.id).extents, (std::vector<int>{}));
}

TEST(ContextParallelPlan, RefusesWhatReadsAcrossPositions) {
  const Graph pooled = attention_half(true);
  try {
    context_parallel_plan(pooled, one_device(pooled), 1, 2, 8);
    FAIL() << "a mean over the sequence was split by sequence";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("'pool'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("across the positions"), std::string::npos) << e.what();
  }
  const Graph serial = attention_half();
  try {
    context_parallel_plan(serial, one_device(serial), 1, 3, 8);
    FAIL() << "8 positions split into 3 shards";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("8 positions"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace unity
