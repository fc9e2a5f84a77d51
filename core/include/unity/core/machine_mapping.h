#pragma once
// The machine-mapping dynamic program (paper 5.2): the fastest assignment of machine views to the
// placed nodes of a PCG. Sequence splits fix the view of the split node; parallel splits run their
// parts one after another on all resources or side by side on a division of the resources (iterating
// resource quantities: whole nodes across nodes, devices inside a node). Subproblems are memoised on
// (part, resources, views of the part's boundary).
#include <map>
#include <vector>

#include "unity/core/mapping_cost.h"
#include "unity/core/sp_decomposition.h"

namespace unity {

struct OpCost {
  NodeId node = -1;
  MachineView view;
  double forward = 0;   // seconds, one task on the slowest device of the view
  double backward = 0;  // seconds, likewise (without the weight update)
  double memory = 0;    // bytes the op keeps on its busiest device
  CostBreakdown own;    // the node's computation, weight updates and weight synchronisation
  CostBreakdown edges;  // what moves into the node from its producers
};

struct MachineMapping {
  bool feasible = false;             // false: some operator has more tasks than devices
  CostBreakdown cost;                // critical path: parallel parts running side by side count once
  std::map<NodeId, MachineView> views;
  std::vector<OpCost> per_op;        // in topological order
  std::vector<double> memory_per_device;
  double peak_memory = 0;
  bool fits_in_memory = false;
  std::size_t subproblems = 0;       // memo entries the search filled
};

MachineMapping optimize_machine_mapping(const MappingCost& costs, DeviceBlock block);
MachineMapping optimize_machine_mapping(const MappingCost& costs);  // the whole machine

// Resource divisions a parallel split may use inside `block`: the size of the first part.
std::vector<int> resource_splits(const MachineSpec& machine, DeviceBlock block);

// Cost of a complete mapping along the decomposition, with `side_by_side` telling, for each Parallel
// node of the decomposition, the division used (first part's size; 0: one after another) and whether
// the first part takes the low devices. The dynamic program's answer equals the minimum of this over
// all mappings and divisions (tested exhaustively on small graphs).
struct ParallelChoice {
  int first_size = 0;   // 0: the parts run one after another on the whole block
  bool first_low = true;
};
CostBreakdown evaluate_mapping(const MappingCost& costs, const SpDecomposition& sp,
                               const std::map<NodeId, MachineView>& views,
                               const std::map<int, ParallelChoice>& choices, DeviceBlock block,
                               bool* feasible);

}  // namespace unity
