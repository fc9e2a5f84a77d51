#include "unity/core/pipeline/context_exchange.h"

#include <algorithm>

#include <fmt/format.h>

#include "unity/core/cost/cost_model.h"
#include "unity/core/errors.h"

namespace unity {

std::string_view to_string(ContextExchange e) {
  return e == ContextExchange::AllGather ? "all_gather" : "p2p";
}

ContextExchange context_exchange_from_string(std::string_view name) {
  if (name == "p2p") return ContextExchange::Ring;
  if (name == "all_gather") return ContextExchange::AllGather;
  throw InputError(fmt::format(
      "unknown context-parallel exchange '{}' (p2p: a ring of key/value sends, all_gather: the "
      "keys and values gathered before the attention)",
      name));
}

ContextExchangeCost context_exchange_cost(ContextExchange e,
                                          const std::vector<std::vector<int>>& groups,
                                          double kv_bytes, double products_forward,
                                          double products_backward, const CostModel& costs) {
  ContextExchangeCost c;
  if (groups.empty() || groups.front().size() < 2) return c;
  const double cp = static_cast<double>(groups.front().size());
  const double sets = static_cast<double>(groups.size());
  if (e == ContextExchange::AllGather) {
    // A ring all-gather moves (cp - 1) / cp of the gathered bytes through each device: half a
    // ring all-reduce of them; the reduce-scatter of their gradients the same.
    const double gather = costs.allreduce_time(groups.front(), kv_bytes) / 2;
    c.forward = gather;
    c.backward = gather;
    c.bytes = 2 * (cp - 1) * kv_bytes * sets;
    c.workspace = 2 * kv_bytes;  // the gathered keys and values, then their gradients
    return c;
  }
  // Each step every rank sends its block to the next one, all rings at once.
  auto step = [&](double bytes) {
    std::vector<Transfer> moves;
    for (const auto& g : groups)
      for (std::size_t i = 0; i < g.size(); ++i)
        moves.push_back({g[i], g[(i + 1) % g.size()], bytes});
    return costs.transfers_time(moves);
  };
  const double block = kv_bytes / cp;
  // Forward: the key/value block; backward: the block and its gradient's partial sum; each
  // step's send behind the products of the block before, where the devices overlap at all.
  const double hidden = costs.machine().device(0).overlaps_communication() ? 1.0 : 0.0;
  c.forward = (cp - 1) * std::max(0.0, step(block) - hidden * products_forward / cp);
  c.backward = (cp - 1) * std::max(0.0, step(2 * block) - hidden * products_backward / cp);
  c.bytes = 3 * (cp - 1) * kv_bytes * sets;
  c.workspace = 4 * block;  // the blocks in flight (received and sent), with gradients backward
  return c;
}

}  // namespace unity
