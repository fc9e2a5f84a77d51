#include "unity/core/pipeline/token_dispatch.h"

#include <algorithm>

#include <fmt/format.h>

#include "unity/core/cost/cost_model.h"
#include "unity/core/errors.h"

namespace unity {

std::string_view to_string(TokenDispatcher d) {
  return d == TokenDispatcher::DeepEp ? "deepep" : "alltoall";
}

TokenDispatcher token_dispatcher_from_string(std::string_view name) {
  if (name == "alltoall") return TokenDispatcher::AllToAll;
  if (name == "deepep") return TokenDispatcher::DeepEp;
  throw InputError(fmt::format("unknown token dispatcher '{}' (alltoall, deepep)", name));
}

double routed_probability(std::int64_t experts, std::int64_t top_k, std::int64_t held) {
  // C(E - m, k) / C(E, k) = prod over i < k of (E - m - i) / (E - i).
  double missed = 1;
  for (std::int64_t i = 0; i < top_k; ++i) {
    const double left = static_cast<double>(experts - held - i);
    if (left <= 0) return 1;
    missed *= left / static_cast<double>(experts - i);
  }
  return 1 - missed;
}

double dispatch_bytes(TokenDispatcher d, const DispatchGroup& g, double message, bool same_node) {
  if (g.devices <= 1) return 0;
  const std::int64_t per_device = g.experts / g.devices;
  if (d == TokenDispatcher::AllToAll)
    return message * static_cast<double>(g.top_k) / static_cast<double>(g.devices);
  if (same_node) return message * routed_probability(g.experts, g.top_k, per_device);
  // Once to each node holding one of its experts, arriving at the node's GPUs in turn.
  return message * routed_probability(g.experts, g.top_k, per_device * g.devices_per_node) /
         static_cast<double>(g.devices_per_node);
}

DispatchCost dispatch_cost(TokenDispatcher d, std::int64_t experts, std::int64_t top_k,
                           const std::vector<int>& group, double message, const CostModel& costs) {
  const MachineSpec& machine = costs.machine();
  auto same_node = [&](int a, int b) { return machine.node_of(a) == machine.node_of(b); };
  DispatchGroup g{experts, top_k, static_cast<int>(group.size()), 1};
  // As many of the group's devices in a node as in the first one's.
  g.devices_per_node = static_cast<int>(std::count_if(
      group.begin(), group.end(), [&](int x) { return same_node(x, group.front()); }));
  DispatchCost cost;
  std::vector<Transfer> moves;
  for (int src : group)
    for (int dst : group)
      if (src != dst) {
        moves.push_back({src, dst, dispatch_bytes(d, g, message, same_node(src, dst))});
        cost.bytes += moves.back().bytes;
        if (!same_node(src, dst)) cost.inter_node_bytes += moves.back().bytes;
      }
  cost.seconds = costs.transfers_time(moves);
  return cost;
}

}  // namespace unity
