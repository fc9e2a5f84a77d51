#pragma once
// The router's node limit on a model's mixture-of-experts layers, as a what-if on any model with
// Experts operators (`optimize --moe-router-num-groups G --moe-router-group-topk M`, Megatron-LM's
// flags): each token's experts come from its best M of G contiguous groups of them, which bounds
// the nodes an expert-parallel dispatch sends it to (token_dispatch.h).
#include <cstdint>

#include "unity/core/pcg/graph.h"

namespace unity {

// Sets every Experts operator's route_groups and route_group_top_k (groups 1, or kept >= groups:
// no limit). Throws InputError when the graph has no Experts operator, or when the groups do not
// divide its experts or keep fewer than its top-k.
void set_route_groups(Graph& graph, std::int64_t groups, std::int64_t kept);

}  // namespace unity
