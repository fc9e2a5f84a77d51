#include "unity/core/mapping/mapping_cost.h"

#include <algorithm>

namespace unity {

PlacementGraph::PlacementGraph(const Graph& graph) : graph_(graph) {
  for (NodeId id : graph.topological_order()) {
    const Node& n = graph.node(id);
    if (is_source_op(n.op.type)) {
      root_[id] = id;
      continue;
    }
    if (is_parallel_op(n.op.type) && !n.inputs.empty() && root_.count(n.inputs[0].node)) {
      root_[id] = root_.at(n.inputs[0].node);
      continue;
    }
    placed_.push_back(id);
    placed_set_[id] = true;
    auto& preds = preds_[id];
    for (const auto& in : n.inputs)
      if (!root_.count(in.node) && std::find(preds.begin(), preds.end(), in.node) == preds.end())
        preds.push_back(in.node);
    for (NodeId p : preds) succs_[p].push_back(id);
  }
}

const std::vector<NodeId>& PlacementGraph::predecessors(NodeId id) const {
  static const std::vector<NodeId> kNone;
  auto it = preds_.find(id);
  return it == preds_.end() ? kNone : it->second;
}

const std::vector<NodeId>& PlacementGraph::successors(NodeId id) const {
  static const std::vector<NodeId> kNone;
  auto it = succs_.find(id);
  return it == succs_.end() ? kNone : it->second;
}

}  // namespace unity
