#include "mapping/part_signature.h"

#include <algorithm>
#include <numeric>
#include <unordered_map>
#include <unordered_set>

#include "hashing.h"

namespace unity::detail {
namespace {

// What a placed operator costs depends on: its operator and output shapes, the shapes it reads, and
// whether each input is another placed operator, a weight or a data input.
std::uint64_t local_hash(const PlacementGraph& pg, NodeId id) {
  const Graph& g = pg.graph();
  const Node& n = g.node(id);
  Hasher h;
  hash_operator(h, n);
  h.u64(n.inputs.size());
  for (const auto& in : n.inputs) {
    hash_shape(h, g.shape(in));
    h.i64(in.index);
    if (pg.is_placed(in.node))
      h.u64(0);
    else
      h.u64(1 + static_cast<std::uint64_t>(g.node(pg.source_root(in.node)).op.type));
  }
  return h.value();
}

}  // namespace

std::unordered_map<NodeId, std::uint64_t> operator_signatures(const PlacementGraph& pg) {
  std::unordered_map<NodeId, std::uint64_t> local;
  for (NodeId id : pg.placed()) local[id] = local_hash(pg, id);
  return local;
}

std::vector<PartSignature> part_signatures(const SpDecomposition& sp, const PlacementGraph& pg,
                                           const std::unordered_map<NodeId, std::uint64_t>& local) {
  const Graph& g = pg.graph();
  std::unordered_map<NodeId, std::size_t> topo;
  for (std::size_t i = 0; i < pg.placed().size(); ++i) topo[pg.placed()[i]] = i;

  std::vector<PartSignature> out(sp.size());
  for (int index = 0; index < sp.size(); ++index) {
    const SpNode& part = sp.node(index);
    std::vector<NodeId> members = part.members;
    std::sort(members.begin(), members.end(),
              [&](NodeId a, NodeId b) { return topo.at(a) < topo.at(b); });
    const std::unordered_set<NodeId> inside(members.begin(), members.end());
    // Each member's hash covers the members it reads (recursively) and the boundary operators it
    // reads, by kind and slot.
    std::unordered_map<NodeId, std::uint64_t> up;
    for (NodeId m : members) {
      Hasher h;
      h.u64(local.at(m));
      for (const auto& in : g.node(m).inputs) {
        if (!pg.is_placed(in.node)) continue;
        if (inside.count(in.node)) {
          h.u64(1);
          h.u64(up.at(in.node));
        } else {
          h.u64(2);
          h.u64(local.at(in.node));
        }
        h.i64(in.index);
      }
      up[m] = h.value();
    }
    // Boundary operators, each with where it attaches: reading a member (direction 1) or being read
    // by one (direction 0), with the slot.
    std::unordered_map<NodeId, std::vector<std::uint64_t>> attach;
    for (NodeId m : members) {
      const auto& inputs = g.node(m).inputs;
      for (std::size_t s = 0; s < inputs.size(); ++s) {
        const NodeId p = inputs[s].node;
        if (!pg.is_placed(p) || inside.count(p)) continue;
        Hasher h;
        h.u64(0);
        h.u64(up.at(m));
        h.u64(s);
        h.i64(inputs[s].index);
        attach[p].push_back(h.value());
      }
      for (NodeId c : pg.successors(m)) {
        if (inside.count(c)) continue;
        const auto& cin = g.node(c).inputs;
        for (std::size_t s = 0; s < cin.size(); ++s) {
          if (cin[s].node != m) continue;
          Hasher h;
          h.u64(1);
          h.u64(up.at(m));
          h.u64(s);
          h.i64(cin[s].index);
          attach[c].push_back(h.value());
        }
      }
    }
    PartSignature& sig = out[index];
    std::vector<std::pair<std::uint64_t, NodeId>> keyed;
    for (NodeId b : part.boundary) {
      auto& a = attach[b];
      std::sort(a.begin(), a.end());
      Hasher h;
      h.u64(local.at(b));
      for (auto x : a) h.u64(x);
      keyed.emplace_back(h.value(), b);
    }
    std::sort(keyed.begin(), keyed.end());
    for (const auto& [key, b] : keyed) {
      sig.boundary.push_back(b);
      sig.boundary_keys.push_back(key);
    }
    std::vector<std::uint64_t> all;
    for (NodeId m : members) all.push_back(up.at(m));
    std::sort(all.begin(), all.end());
    Hasher h;
    h.u64(static_cast<std::uint64_t>(part.kind));
    for (auto x : all) h.u64(x);
    for (auto x : sig.boundary_keys) h.u64(x);
    sig.content = h.value();
  }
  return out;
}

}  // namespace unity::detail
