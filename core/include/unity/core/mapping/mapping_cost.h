#pragma once
// Costs of a PCG under a machine mapping, split so that the mapping search can add them up piece by
// piece: a node's own cost on a view, and the cost of each edge between two placed nodes.
//
// Which nodes get a view: compute operators, and parallel operators that move activations. Sources
// (Input, Weight) and the parallel operators applied to them are attached to the operator that
// reads them: data is loaded, and weights live, where the reading task runs, so their only costs
// are the backward synchronisation of replicated weights (Replicate's backward is the gradient sum,
// paper 3.3) and the optimizer update, both charged to the reading operator.
#include <limits>
#include <map>
#include <set>
#include <unordered_map>
#include <vector>

#include "unity/core/cost/cost_model.h"
#include "unity/core/mapping/machine_view.h"
#include "unity/core/pcg/graph.h"

namespace unity {

// The time of a plan that cannot run (a view that does not fit, an operator no device takes).
inline constexpr double kInfinity = std::numeric_limits<double>::infinity();

struct CostBreakdown {
  double compute = 0;        // seconds of forward + backward computation (and weight updates)
  double communication = 0;  // seconds of transfers and collectives
  double bytes = 0;          // bytes all devices send
  double time() const { return compute + communication; }
  CostBreakdown& operator+=(const CostBreakdown& o) {
    compute += o.compute;
    communication += o.communication;
    bytes += o.bytes;
    return *this;
  }
};

class PlacementGraph {
 public:
  explicit PlacementGraph(const Graph& graph);

  const Graph& graph() const { return graph_; }
  const std::vector<NodeId>& placed() const { return placed_; }  // topological order
  bool is_placed(NodeId id) const { return placed_set_.count(id) != 0; }
  const std::vector<NodeId>& predecessors(NodeId id) const;  // placed nodes it reads
  const std::vector<NodeId>& successors(NodeId id) const;    // placed nodes that read it
  // The source a non-placed tensor comes from (Weight or Input node).
  NodeId source_root(NodeId id) const { return root_.at(id); }

 private:
  const Graph& graph_;
  std::vector<NodeId> placed_;
  std::unordered_map<NodeId, bool> placed_set_;
  std::unordered_map<NodeId, NodeId> root_;
  std::unordered_map<NodeId, std::vector<NodeId>> preds_, succs_;
};

class MappingCost {
 public:
  MappingCost(const Graph& graph, const CostModel& model);

  const PlacementGraph& placement() const { return placement_; }
  const CostModel& model() const { return model_; }
  const std::vector<int>& extents(NodeId id) const { return extents_.at(id); }

  // Computation of every task (the slowest device decides), plus the synchronisation and update of
  // the weights the node reads.
  CostBreakdown node_cost(NodeId id, const MachineView& view) const;
  // Everything that moves along producer -> consumer: a parallel operator's collective, or the
  // pieces a compute operator needs that its producer left on other devices; forward and backward.
  CostBreakdown edge_cost(NodeId producer, const MachineView& pv, NodeId consumer,
                          const MachineView& cv) const;
  // Bytes each device holds for training under a complete mapping: weights, gradients, optimizer
  // state, saved activations.
  std::vector<double> memory_per_device(const std::map<NodeId, MachineView>& views) const;
  // What the busiest device holds whatever the mapping, as long as no operator puts two of its
  // tasks on one device: the sum over operators of one task's bytes. Exact when every operator
  // spans the same devices; the search ranks candidates with it because it needs no mapping.
  double memory_upper_bound() const;
  // This node's share of the above, added into `per_device`.
  void add_node_memory(NodeId id, const MachineView& view, std::vector<double>& per_device) const;
  // One task's forward and backward time on the slowest device type of the view.
  OpTimes op_times(NodeId id, const MachineView& view) const;

 private:
  CostBreakdown parallel_edge(NodeId producer, int index, const MachineView& pv, NodeId consumer,
                              const MachineView& cv) const;
  CostBreakdown piecewise_edge(const ParallelTensorShape& tensor, const MachineView& pv,
                               const MachineView& cv) const;
  // Input `slot` of a Concat whose axis is cut into pieces: only the tasks of its block read it.
  CostBreakdown concat_piece_edge(NodeId consumer, int slot, const MachineView& pv,
                                  const MachineView& cv) const;

  const Graph& graph_;
  const CostModel& model_;
  PlacementGraph placement_;
  std::unordered_map<NodeId, std::vector<int>> extents_;
  std::set<NodeId> shared_tied_;  // tied weights stored by their partner on every device
};

}  // namespace unity
