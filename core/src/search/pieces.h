#pragma once
// The pieces of a cut graph as the hierarchical search handles them: a piece's graph for one
// entering partitioning, its data-parallel starting points, the cost of handing its result on in
// another partitioning, renaming a solved piece onto an equal one, and gluing the chosen pieces
// back together.
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <vector>

#include "unity/core/cost/cost_model.h"
#include "unity/core/search/graph_splitting.h"
#include "unity/core/search/substitution_search.h"

namespace unity::detail {

// A piece's graph ready to search. The tensor entering arrives already partitioned (`layout`): the
// boundary input is partitioned for free (it stands for the previous piece's result, which is there
// in that layout), passes a frozen Identity (so that the conversions after it are priced like any
// operator), and is converted to whatever the body reads.
struct PieceGraph {
  Graph graph;
  NodeId identity = -1;        // the frozen Identity after the entering tensor (-1: first piece)
  NodeId marker = -1;          // the frozen Identity reading the result (-1: last piece)
  NodeId boundary_input = -1;  // the Input standing for the entering tensor
  std::set<NodeId> entry;      // boundary_input, its partitions and `identity`: dropped when glued
};

PieceGraph instantiate(const SegmentTemplate& t, const Graph& body,
                       const ParallelTensorShape* layout);

// The template's body data-parallel on `degree` devices (the entering tensor partitioned along its
// leading dim like the batch); nothing when some operator cannot be split so.
std::optional<Graph> data_parallel_body(const SegmentTemplate& t, int degree);

// The layout a piece hands on: the partitioning of the tensor its marker reads.
const ParallelTensorShape& leaving_layout(const PieceGraph& p);

// Time to convert a tensor from one partitioning to another on the machine (a Combine/Partition
// chain between two operators, priced by the mapping DP), memoised.
class ConversionCosts {
 public:
  explicit ConversionCosts(const CostModel& model) : model_(model) {}
  double seconds(const ParallelTensorShape& from, const ParallelTensorShape& to);

 private:
  const CostModel& model_;
  std::map<std::pair<std::string, std::string>, double> memo_;
};

// Node correspondence between two graphs with equal structural hashes: nodes are paired by the hash
// of what they read and the hash of what reads them, ties in topological order.
std::map<NodeId, NodeId> correspondence(const Graph& a, const Graph& b);

// `g` with the nodes in `ids` renumbered, and names renamed: a node mapped from a to b takes b's
// name; a node the search created ("<anchor>.<rest>") gets b's anchor.
Graph rename_graph(const Graph& g, const std::map<NodeId, NodeId>& ids,
                   const std::map<std::string, std::string>& names);
std::string rename(const std::string& name, const std::map<std::string, std::string>& names);

// One chosen piece, to glue.
struct GluePiece {
  const PieceGraph* piece = nullptr;
  const SegmentTemplate* t = nullptr;
  ParallelTensorShape leaving;  // the layout handed to the next piece (unused for the last)
};

// The whole PCG from its pieces: model ids kept, new nodes renumbered, each piece's result
// converted to the layout the next one was searched for, then inverse parallel pairs cancelled.
Graph glue(const Graph& model, const std::vector<GluePiece>& pieces);

}  // namespace unity::detail
