#include <algorithm>
#include <limits>
#include <unordered_map>

#include "unity/core/machine_mapping.h"

namespace unity {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

struct KeyHash {
  std::size_t operator()(const std::vector<int>& k) const {
    std::size_t h = 1469598103934665603ULL;
    for (int x : k) h = (h ^ static_cast<std::size_t>(x + 0x9e3779b9)) * 1099511628211ULL;
    return h;
  }
};

struct PairHash {
  std::size_t operator()(const std::pair<NodeId, int>& p) const {
    return std::hash<NodeId>()(p.first) * 31 + std::hash<int>()(p.second);
  }
};

CostBreakdown infeasible() { return {kInfinity, 0, 0}; }

// Side by side: the slower part is the critical path; bytes are sent by both.
CostBreakdown side_by_side(const CostBreakdown& a, const CostBreakdown& b) {
  CostBreakdown c = a.time() >= b.time() ? a : b;
  c.bytes = a.bytes + b.bytes;
  return c;
}

class MappingSearch {
 public:
  MappingSearch(const MappingCost& costs) : costs_(costs), sp_(costs.placement()) {}

  MachineMapping run(DeviceBlock block) {
    MachineMapping result;
    if (sp_.root() < 0) {
      result.feasible = true;
      result.fits_in_memory = true;
      return result;
    }
    const Entry root = solve(sp_.root(), block);
    result.subproblems = memo_.size();
    result.feasible = root.cost.time() < kInfinity;
    if (!result.feasible) return result;
    collect(sp_.root(), block, result.views);
    result.cost = root.cost;
    return result;
  }

 private:
  struct Entry {
    CostBreakdown cost;
    int view = -1;           // Leaf / Series: the chosen view of the node
    ParallelChoice choice;   // Parallel
  };

  const std::vector<int>& views(NodeId node, DeviceBlock block) {
    std::vector<int> key{static_cast<int>(node), block.start, block.size};
    auto it = view_cache_.find(key);
    if (it != view_cache_.end()) return it->second;
    std::vector<int> ids;
    for (auto& v : candidate_views(costs_.extents(node), block)) {
      view_table_.push_back(std::move(v));
      ids.push_back(static_cast<int>(view_table_.size()) - 1);
    }
    return view_cache_.emplace(std::move(key), std::move(ids)).first->second;
  }

  const CostBreakdown& node_cost(NodeId node, int view) {
    auto key = std::make_pair(node, view);
    auto it = node_cache_.find(key);
    if (it != node_cache_.end()) return it->second;
    return node_cache_.emplace(key, costs_.node_cost(node, view_table_[view])).first->second;
  }

  // Edges between `node` (on `view`) and the boundary nodes of a part, whose views are fixed.
  CostBreakdown boundary_edges(NodeId node, int view, const SpNode& part) {
    CostBreakdown c;
    const auto& pg = costs_.placement();
    for (NodeId b : part.boundary) {
      const auto& bv = view_table_[assigned_.at(b)];
      const auto& preds = pg.predecessors(node);
      const auto& succs = pg.successors(node);
      if (std::find(preds.begin(), preds.end(), b) != preds.end())
        c += costs_.edge_cost(b, bv, node, view_table_[view]);
      if (std::find(succs.begin(), succs.end(), b) != succs.end())
        c += costs_.edge_cost(node, view_table_[view], b, bv);
    }
    return c;
  }

  std::vector<int> memo_key(int index, DeviceBlock block) const {
    const SpNode& part = sp_.node(index);
    std::vector<int> key{index, block.start, block.size};
    for (NodeId b : part.boundary) key.push_back(assigned_.at(b));
    return key;
  }

  Entry solve(int index, DeviceBlock block) {
    auto key = memo_key(index, block);
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    const SpNode& part = sp_.node(index);
    Entry best{infeasible(), -1, {}};
    switch (part.kind) {
      case SpNode::Kind::Leaf:
        for (int v : views(part.node, block)) {
          CostBreakdown c = node_cost(part.node, v);
          c += boundary_edges(part.node, v, part);
          if (c.time() < best.cost.time()) best = {c, v, {}};
        }
        break;
      case SpNode::Kind::Series:
        for (int v : views(part.node, block)) {
          CostBreakdown c = node_cost(part.node, v);
          c += boundary_edges(part.node, v, part);
          assigned_[part.node] = v;
          if (part.first >= 0 && c.time() < kInfinity) c += solve(part.first, block).cost;
          if (part.second >= 0 && c.time() < kInfinity) c += solve(part.second, block).cost;
          assigned_.erase(part.node);
          if (c.time() < best.cost.time()) best = {c, v, {}};
        }
        break;
      case SpNode::Kind::Parallel: {
        CostBreakdown seq = solve(part.first, block).cost;
        if (seq.time() < kInfinity) seq += solve(part.second, block).cost;
        best = {seq, -1, {0, true}};
        for (int k : resource_splits(costs_.model().machine(), block)) {
          for (bool low : {true, false}) {
            const DeviceBlock a = low ? DeviceBlock{block.start, k}
                                      : DeviceBlock{block.start + block.size - k, k};
            const DeviceBlock b = low ? DeviceBlock{block.start + k, block.size - k}
                                      : DeviceBlock{block.start, block.size - k};
            const CostBreakdown ca = solve(part.first, a).cost;
            if (ca.time() >= best.cost.time()) continue;
            const CostBreakdown cb = solve(part.second, b).cost;
            const CostBreakdown c = side_by_side(ca, cb);
            if (c.time() < best.cost.time()) best = {c, -1, {k, low}};
          }
        }
        break;
      }
    }
    memo_.emplace(std::move(key), best);
    return best;
  }

  void collect(int index, DeviceBlock block, std::map<NodeId, MachineView>& out) {
    const Entry e = memo_.at(memo_key(index, block));
    const SpNode& part = sp_.node(index);
    switch (part.kind) {
      case SpNode::Kind::Leaf:
        out[part.node] = view_table_[e.view];
        break;
      case SpNode::Kind::Series:
        out[part.node] = view_table_[e.view];
        assigned_[part.node] = e.view;
        if (part.first >= 0) collect(part.first, block, out);
        if (part.second >= 0) collect(part.second, block, out);
        assigned_.erase(part.node);
        break;
      case SpNode::Kind::Parallel: {
        const int k = e.choice.first_size;
        if (k == 0) {
          collect(part.first, block, out);
          collect(part.second, block, out);
        } else {
          const bool low = e.choice.first_low;
          collect(part.first, low ? DeviceBlock{block.start, k}
                                   : DeviceBlock{block.start + block.size - k, k}, out);
          collect(part.second, low ? DeviceBlock{block.start + k, block.size - k}
                                    : DeviceBlock{block.start, block.size - k}, out);
        }
        break;
      }
    }
  }

  const MappingCost& costs_;
  SpDecomposition sp_;
  std::vector<MachineView> view_table_;
  std::unordered_map<std::vector<int>, std::vector<int>, KeyHash> view_cache_;
  std::unordered_map<std::pair<NodeId, int>, CostBreakdown, PairHash> node_cache_;
  std::unordered_map<std::vector<int>, Entry, KeyHash> memo_;
  std::unordered_map<NodeId, int> assigned_;  // views of nodes fixed by enclosing splits
};

}  // namespace

std::vector<int> resource_splits(const MachineSpec& machine, DeviceBlock block) {
  std::vector<int> out;
  const int per_node = machine.devices_per_node;
  if (block.size > per_node && block.size % per_node == 0 && block.start % per_node == 0) {
    for (int k = per_node; k < block.size; k += per_node) out.push_back(k);
  } else {
    for (int k = 1; k < block.size; ++k) out.push_back(k);
  }
  return out;
}

MachineMapping optimize_machine_mapping(const MappingCost& costs, DeviceBlock block) {
  MappingSearch search(costs);
  MachineMapping m = search.run(block);
  if (!m.feasible) return m;
  const auto& pg = costs.placement();
  for (NodeId id : pg.placed()) {
    OpCost op;
    op.node = id;
    op.view = m.views.at(id);
    const OpTimes times = costs.op_times(id, op.view);
    op.forward = times.forward;
    op.backward = times.backward;
    std::vector<double> mem(costs.model().machine().num_devices(), 0.0);
    costs.add_node_memory(id, op.view, mem);
    op.memory = *std::max_element(mem.begin(), mem.end());
    op.own = costs.node_cost(id, op.view);
    for (NodeId p : pg.predecessors(id)) op.edges += costs.edge_cost(p, m.views.at(p), id, op.view);
    m.per_op.push_back(std::move(op));
  }
  m.memory_per_device = costs.memory_per_device(m.views);
  const auto& machine = costs.model().machine();
  m.fits_in_memory = true;
  for (int d = 0; d < static_cast<int>(m.memory_per_device.size()); ++d) {
    m.peak_memory = std::max(m.peak_memory, m.memory_per_device[d]);
    if (m.memory_per_device[d] > static_cast<double>(machine.device(d).memory_bytes))
      m.fits_in_memory = false;
  }
  return m;
}

MachineMapping optimize_machine_mapping(const MappingCost& costs) {
  return optimize_machine_mapping(costs, {0, costs.model().machine().num_devices()});
}

}  // namespace unity
