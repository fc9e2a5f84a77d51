#pragma once
// How many tokens a mixture-of-experts layer's busiest device runs through its experts, against
// an even share. A router does not deal tokens evenly; the device whose experts get the most sets
// the layer's time, since the all-to-alls wait for it.
//
// - Dropless (Megatron-Core's default): every routed token runs. The user states the imbalance:
//   the busiest expert-parallel device's tokens over an even share (1: balanced, as a router
//   with an auxiliary loss or forced balancing tends to; the layer's work and its all-to-all
//   receive scale by it). Where one device holds all the experts, imbalance changes nothing.
// - A capacity factor C (Megatron-Core's --moe-expert-capacity-factor with
//   --moe-pad-expert-input-to-capacity): each expert takes at most C x its even share, the
//   tokens past it are dropped, and the rest are padded up to it, so every device runs and
//   receives exactly C x its share.
#include "unity/core/pcg/graph.h"

namespace unity {

struct ExpertLoad {
  double capacity_factor = 0;  // > 0: capped and padded to it; 0: dropless
  double imbalance = 1;        // dropless: the busiest device's share over an even one (>= 1)

  bool dropless() const { return capacity_factor <= 0; }
  bool balanced() const { return dropless() && imbalance == 1; }
  // The factor on a device's routed tokens and the all-to-all it receives, its experts `spread`
  // over more than one device (else a dropless layer runs every token on the one device).
  double factor(bool spread) const {
    if (!dropless()) return capacity_factor;
    return spread ? imbalance : 1.0;
  }
};

// A segment kind's plan as the pipeline planner costs its Experts tasks (task_work's
// "expert_parallel" and "expert_load"): each device's experts spread over `expert_parallel`
// devices beyond the plan's own split of them, fed by the tokens of that many replicas, and as
// loaded as the busiest device. Whoever compares with the planner's costs prices them the same.
void cost_experts_as_planned(Graph& segment_plan, int expert_parallel, const ExpertLoad& load);

}  // namespace unity
