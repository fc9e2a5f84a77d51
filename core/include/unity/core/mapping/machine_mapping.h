#pragma once
// The machine-mapping dynamic program (paper 5.2): the fastest assignment of machine views to the
// placed nodes of a PCG. Sequence splits fix the view of the split node; parallel splits run their
// parts one after another on all resources or side by side on a division of the resources
// (iterating resource quantities: whole nodes across nodes, devices inside a node). Subproblems are
// memoised on (part, resources, views of the part's boundary).
#include <map>
#include <memory>
#include <vector>

#include "unity/core/mapping/mapping_cost.h"
#include "unity/core/mapping/sp_decomposition.h"

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
  bool feasible = false;  // false: some operator has more tasks than devices
  CostBreakdown cost;     // critical path: parallel parts running side by side count once
  std::map<NodeId, MachineView> views;
  std::vector<OpCost> per_op;  // in topological order
  std::vector<double> memory_per_device;
  double peak_memory = 0;
  bool fits_in_memory = false;
  std::size_t subproblems = 0;  // memo entries the search filled
};

MachineMapping optimize_machine_mapping(const MappingCost& costs, DeviceBlock block);

// Solved subproblems shared by the mapping searches of many candidate PCGs of one cost model (paper
// 5.2: a substitution changes a small part of a PCG, so candidates share most subgraphs). Keyed by
// a subgraph's content, not by node ids. Not thread-safe: one cache per search thread.
class MappingCache {
 public:
  MappingCache();
  ~MappingCache();
  MappingCache(const MappingCache&) = delete;
  MappingCache& operator=(const MappingCache&) = delete;
  std::size_t size() const;  // subproblems stored
  struct Impl;

 private:
  friend struct MappingEstimate estimate_machine_mapping(const MappingCost&, DeviceBlock,
                                                         MappingCache*);
  std::unique_ptr<Impl> impl_;
};

// The DP's cost of the best mapping, without the mapping itself: what the search needs for every
// candidate. With a cache, subproblems solved for earlier candidates are reused; without one, this
// is optimize_machine_mapping's cost.
struct MappingEstimate {
  bool feasible = false;
  CostBreakdown cost;
  std::size_t subproblems = 0;  // subproblems solved (not found in the cache)
};
MappingEstimate estimate_machine_mapping(const MappingCost& costs, DeviceBlock block,
                                         MappingCache* cache);
MappingEstimate estimate_machine_mapping(const MappingCost& costs, MappingCache* cache);
MachineMapping optimize_machine_mapping(const MappingCost& costs);  // the whole machine

// Resource divisions a parallel split may use inside `block`: the size of the first part.
std::vector<int> resource_splits(const MachineSpec& machine, DeviceBlock block);

// The divisions the DP tries for a parallel split whose parts need `first_tasks` and `second_tasks`
// devices (their widest operators): among resource_splits, those leaving each part enough devices,
// and of those only the first part's tightest fit and the smallest island- and node-aligned sizes
// above it, and the same from the second part's side. A part given more devices than its widest
// operator can use gains nothing but placement freedom, which the aligned sizes keep; the count
// stays small where a wide graph (DLRM's 27 branches) would otherwise try every division at
// every level.
std::vector<int> parallel_divisions(const MachineSpec& machine, DeviceBlock block, int first_tasks,
                                    int second_tasks);
// The most tasks any operator of decomposition part `index` has.
int max_tasks(const MappingCost& costs, const SpDecomposition& sp, int index);

// Cost of a complete mapping along the decomposition, with `side_by_side` telling, for each
// Parallel node of the decomposition, the division used (first part's size; 0: one after another)
// and whether the first part takes the low devices. The dynamic program's answer equals the minimum
// of this over all mappings and divisions (tested exhaustively on small graphs).
struct ParallelChoice {
  int first_size = 0;  // 0: the parts run one after another on the whole block
  bool first_low = true;
};
CostBreakdown evaluate_mapping(const MappingCost& costs, const SpDecomposition& sp,
                               const std::map<NodeId, MachineView>& views,
                               const std::map<int, ParallelChoice>& choices, DeviceBlock block,
                               bool* feasible);

}  // namespace unity
