#include "unity/core/pcg/tied_weights.h"

#include <stdexcept>
#include <unordered_map>

namespace unity {
namespace {

std::unordered_map<std::string, NodeId> weights_by_name(const Graph& g) {
  std::unordered_map<std::string, NodeId> out;
  for (const auto& [id, n] : g.nodes())
    if (n.op.type == OpType::Weight) out.emplace(n.op.name, id);
  return out;
}

}  // namespace

std::optional<NodeId> tied_partner(const Graph& g, NodeId weight) {
  const Node& n = g.node(weight);
  if (n.op.type != OpType::Weight || !n.op.attrs.has(kTiedTo)) return std::nullopt;
  const std::string to = n.op.attrs.get_string(kTiedTo);
  for (const auto& [id, other] : g.nodes())
    if (id != weight && other.op.type == OpType::Weight && other.op.name == to) return id;
  return std::nullopt;
}

std::set<NodeId> tied_copies(const Graph& g) {
  std::set<NodeId> out;
  std::unordered_map<std::string, NodeId> names;
  for (const auto& [id, n] : g.nodes()) {
    if (n.op.type != OpType::Weight || !n.op.attrs.has(kTiedTo)) continue;
    if (names.empty()) names = weights_by_name(g);
    const auto it = names.find(n.op.attrs.get_string(kTiedTo));
    if (it != names.end() && it->second != id) out.insert(id);
  }
  return out;
}

void tie_weight(Graph& g, NodeId weight, const std::string& to) {
  Node& n = g.mutable_node(weight);
  if (n.op.type != OpType::Weight)
    throw std::logic_error("tie_weight: node " + n.op.name + " is not a Weight");
  for (const auto& [id, other] : g.nodes())
    if (other.op.type == OpType::Weight && other.op.name == to &&
        other.outputs.at(0).num_elements() != n.outputs.at(0).num_elements())
      throw std::logic_error("tie_weight: " + n.op.name + " and " + to + " differ in size");
  n.op.attrs.set(kTiedTo, to);
}

}  // namespace unity
