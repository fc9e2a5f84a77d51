#pragma once
// How the search prices a candidate PCG.
#include "unity/core/cost/cost_model.h"
#include "unity/core/mapping/machine_mapping.h"
#include "unity/core/search/substitution_search.h"

namespace unity {

// For ranking candidates: the machine-mapping DP's time (sharing solved subgraphs through `cache`
// when given; paper 5.2) and MappingCost::memory_upper_bound against `memory_budget` bytes (0: the
// smallest device memory of the machine). The mapping itself is not built.
CandidateCost estimate_candidate(const Graph& g, const CostModel& model, MappingCache* cache,
                                 double memory_budget = 0);

// For a plan: the DP with its mapping, per-operator costs and the memory of every device.
CandidateCost cost_candidate(const Graph& g, const CostModel& model);

// A lower bound of the iteration time whatever the mapping: the longest chain of operators, each
// taking one task's forward and backward time on the fastest device. Cheap (no mapping search), so
// the search skips pricing starting points that cannot compete.
double critical_path_bound(const Graph& g, const CostModel& model);

// Every operator's tasks packed on the first devices, each with its own and its input edges'
// costs: the larger of the critical path and the total work spread over all devices. A cheap
// estimate (one view per operator, no mapping search) by which the search orders the successors of
// a candidate before it prices them.
double packed_estimate(const Graph& g, const CostModel& model);

// The smallest memory capacity among the machine's devices.
double smallest_device_memory(const MachineSpec& machine);

}  // namespace unity
