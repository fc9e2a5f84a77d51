#pragma once
// Where a pipelined mixture-of-experts plan keeps its experts and what its all-to-alls carry, read
// off the plan as the planner laid it out (pipeline_planner.cpp's expert groups): the explorer's
// topology view colours devices by it and writes the traffic on the links.
//
// A pipeline rank's tp x cp x dp devices, numbered copy by copy (copy x replica + index, the
// grid's order), form groups of ep consecutive ones that exchange tokens by all-to-all; the i-th
// device of every group holds the same experts, E / ep of each of the rank's MoE layers (the
// expert-data-parallel copies of them), so the experts of a layer are spread over one group.
// With each expert split over etp devices (expert_tensor_parallel), a group is ep x etp
// consecutive devices, the etp slices of an expert set side by side.
#include <cstdint>

#include "unity/core/pipeline/pipeline_planner.h"

namespace unity {

struct ExpertPlacement {
  int stage = -1;    // pipeline rank; -1: the plan leaves the device idle
  int group = 0;     // expert-parallel group of the stage: the devices exchanging tokens
  int ep_rank = 0;   // the device's place in its group (0..ep-1)
  int etp_rank = 0;  // which slice of each of its experts' FFN it holds (0..etp-1)
  std::int64_t first_expert = 0, last_expert = -1;  // held of each MoE layer, inclusive
};
// Throws nothing: a device the plan does not use, or a plan without experts, is stage -1 or
// holds no expert (last_expert < first_expert).
ExpertPlacement expert_placement(const PipelinePlan& plan, int device);

// One iteration's all-to-alls (dispatch and combine forward, their gradients backward).
struct AlltoallTraffic {
  double bytes = 0;             // all devices send (plan.alltoall_bytes)
  double inter_node_bytes = 0;  // of those, to another node (plan.alltoall_inter_node_bytes)
  double seconds = 0;           // the busiest pipeline rank's (plan.alltoall_time)
  double exposed = 0;           // of those, what that rank's passes wait for
  int busiest_rank = 0;
  double intra_node_bytes() const { return bytes - inter_node_bytes; }
};
AlltoallTraffic alltoall_traffic(const PipelinePlan& plan);

}  // namespace unity
