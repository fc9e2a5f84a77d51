// Cost of a given complete mapping along the decomposition: the reference the dynamic program is
// tested against.
#include <algorithm>
#include <limits>
#include <set>

#include "unity/core/mapping/machine_mapping.h"

namespace unity {
namespace {

struct Evaluator {
  const MappingCost& costs;
  const SpDecomposition& sp;
  const std::map<NodeId, MachineView>& views;
  const std::map<int, ParallelChoice>& choices;
  bool ok = true;
  // Edges costed so far: a long edge (one that bypasses a split node, in a graph that is not
  // series-parallel) touches the boundary of both its ends' parts and is costed once.
  std::set<std::pair<NodeId, NodeId>> costed;

  const MachineView& view(NodeId id, DeviceBlock block) {
    const MachineView& v = views.at(id);
    for (int d : v.devices())
      if (d < block.start || d >= block.start + block.size) ok = false;
    return v;
  }

  CostBreakdown own(NodeId node, const SpNode& part, DeviceBlock block) {
    const MachineView& v = view(node, block);
    CostBreakdown c = costs.node_cost(node, v);
    const auto& pg = costs.placement();
    for (NodeId b : part.boundary) {
      const auto& preds = pg.predecessors(node);
      const auto& succs = pg.successors(node);
      if (std::find(preds.begin(), preds.end(), b) != preds.end() &&
          costed.insert({b, node}).second)
        c += costs.edge_cost(b, views.at(b), node, v);
      if (std::find(succs.begin(), succs.end(), b) != succs.end() &&
          costed.insert({node, b}).second)
        c += costs.edge_cost(node, v, b, views.at(b));
    }
    return c;
  }

  CostBreakdown eval(int index, DeviceBlock block) {
    const SpNode& part = sp.node(index);
    switch (part.kind) {
      case SpNode::Kind::Leaf:
        return own(part.node, part, block);
      case SpNode::Kind::Series: {
        CostBreakdown c = own(part.node, part, block);
        if (part.first >= 0) c += eval(part.first, block);
        if (part.second >= 0) c += eval(part.second, block);
        return c;
      }
      default: {
        auto it = choices.find(index);
        const ParallelChoice choice = it == choices.end() ? ParallelChoice{} : it->second;
        const int k = choice.first_size;
        if (k == 0) {
          CostBreakdown c = eval(part.first, block);
          c += eval(part.second, block);
          return c;
        }
        const bool low = choice.first_low;
        const CostBreakdown a =
            eval(part.first,
                 low ? DeviceBlock{block.start, k} : DeviceBlock{block.start + block.size - k, k});
        const CostBreakdown b = eval(part.second, low ? DeviceBlock{block.start + k, block.size - k}
                                                      : DeviceBlock{block.start, block.size - k});
        CostBreakdown c = a.time() >= b.time() ? a : b;
        c.bytes = a.bytes + b.bytes;
        return c;
      }
    }
  }
};

}  // namespace

CostBreakdown evaluate_mapping(const MappingCost& costs, const SpDecomposition& sp,
                               const std::map<NodeId, MachineView>& views,
                               const std::map<int, ParallelChoice>& choices, DeviceBlock block,
                               bool* feasible) {
  if (sp.root() < 0) {
    if (feasible) *feasible = true;
    return {};
  }
  Evaluator e{costs, sp, views, choices, true, {}};
  CostBreakdown c = e.eval(sp.root(), block);
  if (feasible) *feasible = e.ok;
  return c;
}

}  // namespace unity
