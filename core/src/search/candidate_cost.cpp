#include "unity/core/search/candidate_cost.h"

#include <algorithm>
#include <limits>
#include <unordered_map>

#include "unity/core/mapping/mapping_cost.h"

namespace unity {
namespace {

CandidateCost infeasible() {
  CandidateCost c;
  c.time = kInfinity;
  c.fits = false;
  c.overflow = kInfinity;
  return c;
}

// The latest finish over the placed operators, each starting when the last of its predecessors
// finishes and taking `duration(id)`.
template <class Duration>
double critical_path(const PlacementGraph& pg, Duration duration) {
  std::unordered_map<NodeId, double> finish;
  double longest = 0;
  for (NodeId id : pg.placed()) {
    double start = 0;
    for (NodeId p : pg.predecessors(id)) start = std::max(start, finish.at(p));
    finish[id] = start + duration(id);
    longest = std::max(longest, finish[id]);
  }
  return longest;
}

}  // namespace

double critical_path_bound(const Graph& g, const CostModel& model) {
  const PlacementGraph pg(g);
  const MachineSpec& machine = model.machine();
  return critical_path(pg, [&](NodeId id) {
    if (!is_compute_op(g.node(id).op.type)) return 0.0;
    double task = kInfinity;
    for (const auto& device : machine.device_types) {
      const OpTimes t = model.task_times(g, id, device);
      task = std::min(task, t.forward + t.backward);
    }
    return task;
  });
}

double packed_estimate(const Graph& g, const CostModel& model) {
  const MappingCost costs(g, model);
  const PlacementGraph& pg = costs.placement();
  const int devices = model.machine().num_devices();
  std::unordered_map<NodeId, MachineView> views;
  double work = 0;
  bool too_wide = false;  // an operator with more tasks than devices: no packed mapping
  const double longest = critical_path(pg, [&](NodeId id) {
    if (too_wide) return 0.0;
    MachineView v;
    v.extents = costs.extents(id);
    int tasks = 1;
    for (int e : v.extents) {
      v.strides.push_back(tasks);
      tasks *= e;
    }
    if (tasks > devices) {
      too_wide = true;
      return 0.0;
    }
    double t = costs.node_cost(id, v).time();
    for (NodeId p : pg.predecessors(id)) t += costs.edge_cost(p, views.at(p), id, v).time();
    work += t * tasks;
    views.emplace(id, std::move(v));
    return t;
  });
  return too_wide ? kInfinity : std::max(longest, work / devices);
}

double smallest_device_memory(const MachineSpec& machine) {
  double m = kInfinity;
  for (int d = 0; d < machine.num_devices(); ++d)
    m = std::min(m, static_cast<double>(machine.device(d).memory_bytes));
  return m;
}

CandidateCost estimate_candidate(const Graph& g, const CostModel& model, MappingCache* cache,
                                 double memory_budget) {
  const MappingCost costs(g, model);
  const MappingEstimate e = estimate_machine_mapping(costs, cache);
  if (!e.feasible) return infeasible();
  CandidateCost c;
  c.time = e.cost.time();
  c.mapping.feasible = true;
  c.mapping.cost = e.cost;
  c.mapping.subproblems = e.subproblems;
  const double budget = memory_budget > 0 ? memory_budget : smallest_device_memory(model.machine());
  const double memory = costs.memory_upper_bound();
  c.mapping.peak_memory = memory;
  c.fits = memory <= budget;
  c.overflow = memory / budget;
  return c;
}

CandidateCost cost_candidate(const Graph& g, const CostModel& model) {
  const MappingCost costs(g, model);
  CandidateCost c;
  c.mapping = optimize_machine_mapping(costs);
  if (!c.mapping.feasible) return infeasible();
  c.time = c.mapping.cost.time();
  c.fits = c.mapping.fits_in_memory;
  const auto& machine = model.machine();
  for (std::size_t d = 0; d < c.mapping.memory_per_device.size(); ++d)
    c.overflow = std::max(
        c.overflow, c.mapping.memory_per_device[d] /
                        static_cast<double>(machine.device(static_cast<int>(d)).memory_bytes));
  return c;
}

}  // namespace unity
