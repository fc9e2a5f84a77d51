// The graph: stable ids, topological order, validation messages, structural hash.
#include <gtest/gtest.h>

#include "unity/core/errors.h"
#include "unity/core/json_io.h"
#include "unity/core/pcg/graph_builder.h"

using namespace unity;

namespace {

// The paper's Figure 1 MLP, optionally built in a different node order so ids differ.
Graph two_layer_mlp(bool weights_first, std::int64_t hidden = 512) {
  Graph g;
  GraphBuilder b(g);
  TensorRef w1, w2, x;
  if (weights_first) {
    w2 = b.weight("second", {hidden, 10});
    w1 = b.weight("first", {784, hidden});
    x = b.input("pixels", {64, 784});
  } else {
    x = b.input("x", {64, 784});
    w1 = b.weight("w1", {784, hidden});
    w2 = b.weight("w2", {hidden, 10});
  }
  auto h = b.op(OpType::Linear, {{"out_features", hidden}}, {x, w1}, weights_first ? "a" : "fc1");
  auto r = b.relu(h, weights_first ? "b" : "relu");
  auto y = b.op(OpType::Linear, {{"out_features", std::int64_t{10}}}, {r, w2},
                weights_first ? "c" : "fc2");
  auto labels = b.input("labels", {64}, DataType::Int64);
  b.softmax_cross_entropy(y, labels, "loss");
  return g;
}

}  // namespace

TEST(Graph, IdsAreStableAndNeverReused) {
  Graph g = two_layer_mlp(false);
  const auto before = g.next_id();
  const auto loss = g.topological_order().back();
  g.remove(loss);
  EXPECT_FALSE(g.contains(loss));
  GraphBuilder b(g);
  auto t = b.relu({0, 0}, "again");
  EXPECT_EQ(t.node, before);
  EXPECT_THROW(g.remove(0), GraphError);  // still read by fc1 and "again"
}

TEST(Graph, TopologicalOrderRespectsEdges) {
  Graph g = two_layer_mlp(true);
  auto order = g.topological_order();
  ASSERT_EQ(order.size(), g.size());
  std::map<NodeId, std::size_t> pos;
  for (std::size_t i = 0; i < order.size(); ++i) pos[order[i]] = i;
  for (const auto& [id, n] : g.nodes())
    for (const auto& in : n.inputs) EXPECT_LT(pos[in.node], pos[id]);
}

TEST(Graph, CycleIsReportedWithANodeName) {
  Graph g = two_layer_mlp(false);
  // Feed relu's output back into fc1's input slot.
  NodeId fc1 = -1, relu = -1;
  for (const auto& [id, n] : g.nodes()) {
    if (n.op.name == "fc1") fc1 = id;
    if (n.op.name == "relu") relu = id;
  }
  g.set_input(fc1, 0, {relu, 0});
  try {
    g.topological_order();
    FAIL();
  } catch (const GraphError& e) {
    EXPECT_NE(std::string(e.what()).find("cycle"), std::string::npos) << e.what();
  }
}

TEST(Graph, AddRejectsBadShapesNamingTheNode) {
  Graph g;
  GraphBuilder b(g);
  auto x = b.input("x", {64, 784});
  try {
    b.op(OpType::Linear, {{"out_features", std::int64_t{10}}}, {x, b.weight("w", {100, 10})},
         "fc1");
    FAIL();
  } catch (const ShapeError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'fc1' (Linear)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("weight"), std::string::npos) << msg;
  }
}

TEST(Graph, ValidateCatchesStaleShapesAndBadArity) {
  Graph g = two_layer_mlp(false);
  EXPECT_NO_THROW(g.validate());
  Graph stale = g;
  stale.mutable_node(0).outputs[0].dims[0].degree = 2;
  EXPECT_THROW(stale.validate(), GraphError);
  Graph arity = g;
  NodeId relu = -1;
  for (const auto& [id, n] : g.nodes())
    if (n.op.type == OpType::Relu) relu = id;
  arity.mutable_node(relu).inputs.push_back({0, 0});
  try {
    arity.validate();
    FAIL();
  } catch (const GraphError& e) {
    EXPECT_NE(std::string(e.what()).find("has 2 inputs, expected 1"), std::string::npos)
        << e.what();
  }
}

TEST(Graph, StructuralHashIgnoresIdsAndNames) {
  EXPECT_EQ(two_layer_mlp(false).structural_hash(), two_layer_mlp(true).structural_hash());
}

TEST(Graph, StructuralHashSeesEveryChange) {
  const Graph base = two_layer_mlp(false);
  const auto h = base.structural_hash();
  EXPECT_NE(two_layer_mlp(false, 256).structural_hash(), h);  // a size

  Graph attr = base;  // an attribute
  for (auto& [id, n] : attr.nodes())
    if (n.op.type == OpType::Relu) attr.mutable_node(id).op.type = OpType::Gelu;
  EXPECT_NE(attr.structural_hash(), h);

  Graph wiring = base;  // the same nodes wired differently: logits skip the ReLU
  NodeId fc1 = -1, fc2 = -1;
  for (const auto& [id, n] : wiring.nodes()) {
    if (n.op.name == "fc1") fc1 = id;
    if (n.op.name == "fc2") fc2 = id;
  }
  wiring.set_input(fc2, 0, {fc1, 0});
  EXPECT_NE(wiring.structural_hash(), h);

  Graph parallel = base;  // a degree: data-parallel first layer
  {
    GraphBuilder b(parallel);
    auto x = b.partition({0, 0}, 0, 2, "part");
    auto w = b.replicate({1, 0}, 2, "rep");
    auto fc = b.op(OpType::Linear, {{"out_features", std::int64_t{512}}}, {x, w}, "fc1p");
    auto c = b.combine(fc, 0, 2, "comb");
    parallel.replace_uses({fc1, 0}, c);
    parallel.remove(fc1);
  }
  EXPECT_NO_THROW(parallel.validate());
  EXPECT_NE(parallel.structural_hash(), h);
}

TEST(Graph, CountsAndSinks) {
  Graph g = two_layer_mlp(false);
  EXPECT_EQ(g.count(OpType::Linear), 2);
  EXPECT_EQ(g.parameter_count(), 784 * 512 + 512 * 10);
  EXPECT_EQ(g.weight_bytes(), (784 * 512 + 512 * 10) * 4);
  auto sinks = g.sinks();
  ASSERT_EQ(sinks.size(), 1u);
  EXPECT_EQ(g.node(sinks[0].node).op.type, OpType::SoftmaxCrossEntropy);
}
