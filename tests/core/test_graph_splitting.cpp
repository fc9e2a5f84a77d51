// Graph splitting (paper 5.3): cut candidates, the choice of cuts, pieces as graphs of their own,
// layout conversion across a cut, and gluing pieces back.
#include <gtest/gtest.h>

#include "unity/core/errors.h"
#include "unity/core/machine/machine_spec.h"
#include "unity/core/pcg/graph_builder.h"
#include "unity/core/search/graph_splitting.h"
#include "unity/core/search/layout_conversion.h"
#include "unity/core/zoo/model_zoo.h"

using namespace unity;

namespace {

ParallelTensorShape layout(std::vector<std::int64_t> sizes, std::vector<int> degrees) {
  auto s = ParallelTensorShape::serial(sizes);
  for (std::size_t i = 0; i < degrees.size(); ++i) s.dims[i].degree = degrees[i];
  return s;
}

// x -> relu -> (a: relu, b: relu) -> add -> relu: only the first relu, the add and the last relu
// hand on one tensor that every later operator depends on.
Graph diamond() {
  Graph g;
  GraphBuilder b(g);
  auto x = b.input("x", {8, 4});
  auto r = b.relu(x, "r");
  auto a = b.relu(r, "a");
  auto c = b.tanh(r, "c");
  auto s = b.add(a, c, "s");
  b.relu(s, "out");
  return g;
}

std::vector<std::string> names(const Graph& g, const std::vector<NodeId>& ids) {
  std::vector<std::string> out;
  for (NodeId id : ids) out.push_back(g.node(id).op.name);
  return out;
}

}  // namespace

TEST(LayoutConversion, EveryPairOfDegreesConverts) {
  for (int from : {1, 2, 3, 6})
    for (int to : {1, 2, 3, 6}) {
      Graph g;
      GraphBuilder b(g);
      auto x = b.input("x", {12, 6});
      TensorRef t = b.relu(x, "r");
      if (from > 1) t = b.partition(t, 0, from, "p");
      const TensorRef out = convert_layout(g, t, layout({12, 6}, {to, 1}), "conv");
      EXPECT_EQ(g.shape(out).dims[0].degree, to) << from << " -> " << to;
      EXPECT_EQ(g.shape(out).replica, 1);
      // Never more pieces than at either end.
      for (const auto& [id, n] : g.nodes())
        EXPECT_LE(n.outputs[0].num_pieces(), std::max(from, to)) << from << " -> " << to;
      EXPECT_NO_THROW(g.validate());
    }
  Graph g;
  GraphBuilder b(g);
  auto x = b.relu(b.input("x", {4, 4}), "r");
  EXPECT_THROW(convert_layout(g, x, layout({4, 8}, {1, 1}), "bad"), unity::ShapeError);
}

TEST(LayoutConversion, InversePairsCancel) {
  Graph g;
  GraphBuilder b(g);
  auto x = b.relu(b.input("x", {8, 4}), "r");
  auto p = b.partition(x, 0, 2, "p");
  auto c = b.combine(p, 0, 2, "c");
  auto p2 = b.partition(c, 1, 2, "p2");  // a different dim: stays
  b.relu(p2, "out");
  EXPECT_EQ(cancel_inverse_parallel_ops(g), 1);
  EXPECT_EQ(g.count(OpType::Partition), 1);
  EXPECT_EQ(g.count(OpType::Combine), 0);
  EXPECT_NO_THROW(g.validate());
}

TEST(LayoutConversion, UsefulDegreesOfSummit) {
  EXPECT_EQ(useful_degrees(load_machine("summit", {32, 0})),
            (std::vector<std::int64_t>{2, 3, 6, 12, 24, 48, 96, 192}));
  EXPECT_EQ(useful_degrees(load_machine("summit", {0, 1})), std::vector<std::int64_t>{});
  const auto layouts =
      boundary_layouts({96, 512}, DataType::Float32, load_machine("summit", {2, 0}));
  // serial; dim 0 by 2, 3, 6, 12; dim 1 only by 2 (3 and 6 do not divide 512, 12 is not in a node)
  ASSERT_EQ(layouts.size(), 6u);
  EXPECT_EQ(layout_label(layouts[1]), "[96/2, 512]");
  EXPECT_EQ(layout_label(layouts[4]), "[96/12, 512]");
  EXPECT_EQ(layout_label(layouts[5]), "[96, 512/2]");
}

TEST(GraphSplitting, CutCandidatesAreWhereEveryPathPasses) {
  const Graph g = diamond();
  EXPECT_EQ(names(g, cut_candidates(g)), (std::vector<std::string>{"r", "s"}));
}

TEST(GraphSplitting, SmallGraphsAreNotCut) {
  const SplitPlan plan = choose_cuts(diamond(), default_rules(), 10);
  EXPECT_TRUE(plan.cuts.empty());
  ASSERT_EQ(plan.segments.size(), 1u);
  EXPECT_EQ(plan.segments[0].size(), 5u);
}

TEST(GraphSplitting, PiecesHaveTheMinimumSizeAndRepeatWithTheModel) {
  const Graph g = zoo::build("bert-large", 4);
  const SplitPlan plan = choose_cuts(g, default_rules(), 10);
  ASSERT_GE(plan.cuts.size(), 5u);
  for (const auto& piece : plan.segments) EXPECT_GE(piece.size(), 10u);
  // Identical encoder layers give identical pieces once the cuts fall into step with the layers:
  // all but the first two and the last are equal.
  const auto pieces = cut_graph(g, plan);
  ASSERT_EQ(pieces.size(), plan.segments.size());
  for (std::size_t k = 3; k + 1 < pieces.size(); ++k)
    EXPECT_EQ(pieces[k].body.structural_hash(), pieces[2].body.structural_hash()) << k;
  // Every piece but the first reads the previous cut as an input, every piece but the last
  // marks its result, and the pieces hold every operator once.
  std::size_t placed = 0;
  for (std::size_t k = 0; k < pieces.size(); ++k) {
    EXPECT_EQ(pieces[k].boundary_input >= 0, k > 0);
    EXPECT_EQ(pieces[k].output_marker >= 0, k + 1 < pieces.size());
    EXPECT_NO_THROW(pieces[k].body.validate());
    placed += plan.segments[k].size();
  }
  EXPECT_EQ(placed,
            static_cast<std::size_t>(g.size() - g.count(OpType::Input) - g.count(OpType::Weight)));
}
