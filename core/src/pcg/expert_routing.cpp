#include "unity/core/pcg/expert_routing.h"

#include <fmt/format.h>

#include "unity/core/errors.h"

namespace unity {

void set_route_groups(Graph& graph, std::int64_t groups, std::int64_t kept) {
  if (groups < 1 || kept < 1)
    throw InputError(
        fmt::format("route groups must be positive: {} groups, {} kept (--moe-router-num-groups, "
                    "--moe-router-group-topk)",
                    groups, kept));
  const bool limited = groups > 1 && kept < groups;
  int layers = 0;
  for (const auto& [id, n] : graph.nodes()) {
    if (n.op.type != OpType::Experts) continue;
    const std::int64_t experts = graph.shape(n.inputs.at(2)).dims[0].size;
    const std::int64_t top_k = n.op.attrs.get_int("top_k");
    if (limited && experts % groups != 0)
      throw InputError(fmt::format("{}: {} route groups do not divide its {} experts",
                                   graph.describe(id), groups, experts));
    if (limited && top_k > kept * (experts / groups))
      throw InputError(
          fmt::format("{}: {} of {} groups keep {} experts, fewer than the {} a token goes through",
                      graph.describe(id), kept, groups, kept * (experts / groups), top_k));
    Node& node = graph.mutable_node(id);
    node.op.attrs.set("route_groups", limited ? groups : std::int64_t{0});
    node.op.attrs.set("route_group_top_k", limited ? kept : std::int64_t{0});
    ++layers;
  }
  if (layers == 0)
    throw InputError(fmt::format(
        "{} has no mixture-of-experts layer (Experts operator) whose routing could be limited",
        graph.name));
}

}  // namespace unity
