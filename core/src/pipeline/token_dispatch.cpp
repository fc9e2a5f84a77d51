#include "unity/core/pipeline/token_dispatch.h"

#include <algorithm>
#include <cmath>

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

bool ExpertRouting::limited() const {
  return groups > 1 && group_top_k > 0 && group_top_k < groups && experts % groups == 0;
}

namespace {

// C(n, k) as a double (the counts here are at most a few hundred).
double choose(std::int64_t n, std::int64_t k) {
  if (k < 0 || k > n) return 0;
  double c = 1;
  for (std::int64_t i = 0; i < k; ++i)
    c = c * static_cast<double>(n - i) / static_cast<double>(i + 1);
  return c;
}

}  // namespace

double routed_probability(const ExpertRouting& r, std::int64_t held) {
  if (!r.limited()) return routed_probability(r.experts, r.top_k, held);
  if (held <= 0) return 0;
  if (held >= r.experts) return 1;
  const std::int64_t size = r.experts / r.groups;
  const std::int64_t covered = (held + size - 1) / size;  // groups the block reaches into
  const std::int64_t in_each = std::min(held, size);
  const std::int64_t picks = std::max<std::int64_t>(1, r.top_k / r.group_top_k);
  const double miss_one = 1 - routed_probability(size, picks, in_each);
  double missed = 0;
  for (std::int64_t j = 0; j <= std::min(covered, r.group_top_k); ++j)
    missed += choose(covered, j) * choose(r.groups - covered, r.group_top_k - j) *
              std::pow(miss_one, static_cast<double>(j));
  return 1 - missed / choose(r.groups, r.group_top_k);
}

double dispatch_bytes(TokenDispatcher d, const DispatchGroup& g, double message, bool same_node) {
  if (g.devices <= 1) return 0;
  const std::int64_t per_device = g.routing.experts / g.devices;
  if (d == TokenDispatcher::AllToAll)
    return message * static_cast<double>(g.routing.top_k) / static_cast<double>(g.devices);
  if (same_node) return message * routed_probability(g.routing, per_device);
  // Once to each node holding one of its experts, arriving at the node's GPUs in turn.
  return message * routed_probability(g.routing, per_device * g.devices_per_node) /
         static_cast<double>(g.devices_per_node);
}

DispatchCost dispatch_cost(TokenDispatcher d, const ExpertRouting& routing,
                           const std::vector<int>& group, double message, const CostModel& costs) {
  const MachineSpec& machine = costs.machine();
  auto same_node = [&](int a, int b) { return machine.node_of(a) == machine.node_of(b); };
  DispatchGroup g{routing, static_cast<int>(group.size()), 1};
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
