#pragma once
// Series-parallel decomposition of the placed nodes of a PCG (paper 5.2, Figure 13). A set of nodes
// splits in sequence at a node every other node of the set reaches or is reached from (the
// post-dominator of the paper), or in parallel into parts with no edge between them. A part that is
// neither (not series-parallel) is split in sequence after its first node, which keeps the cost a
// valid upper bound: those nodes just run one after another.
#include <vector>

#include "unity/core/mapping/mapping_cost.h"

namespace unity {

struct SpNode {
  enum class Kind { Leaf, Series, Parallel };
  Kind kind = Kind::Leaf;
  NodeId node = -1;  // Leaf: the node; Series: the split node
  int first = -1;    // Series: the part before the split node (-1: empty); Parallel: one part
  int second = -1;   // Series: the part after (-1: empty); Parallel: the other part
  std::vector<NodeId> members;   // every node of this part
  std::vector<NodeId> boundary;  // placed nodes outside the part adjacent to it
};

class SpDecomposition {
 public:
  // Parallel components are split into two halves (`balanced`), or the first component against
  // the rest. The halves nest log(m) deep, which the search's estimates need on wide graphs; the
  // other form places many small branches one by one and sometimes maps better, so the final
  // costing of a plan tries both (see optimize_machine_mapping).
  explicit SpDecomposition(const PlacementGraph& placement, bool balanced = true);
  int root() const { return root_; }                         // -1 when nothing is placed
  bool has_wide_parallel() const { return wide_parallel_; }  // a split of more than 2 components
  const SpNode& node(int index) const { return nodes_.at(index); }
  int size() const { return static_cast<int>(nodes_.size()); }

 private:
  int build(const std::vector<NodeId>& members);
  const PlacementGraph& placement_;
  bool balanced_ = true;
  bool wide_parallel_ = false;
  std::vector<SpNode> nodes_;
  int root_ = -1;
};

}  // namespace unity
