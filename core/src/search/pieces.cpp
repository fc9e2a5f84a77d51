#include "search/pieces.h"

#include <algorithm>
#include <cstdlib>
#include <limits>

#include <fmt/format.h>

#include "hashing.h"
#include "unity/core/errors.h"
#include "unity/core/mapping/machine_mapping.h"
#include "unity/core/search/layout_conversion.h"
#include "unity/core/strategies/data_parallel.h"

namespace unity::detail {

PieceGraph instantiate(const SegmentTemplate& t, const Graph& body,
                       const ParallelTensorShape* layout) {
  PieceGraph p;
  p.graph = body;
  p.marker = t.output_marker;
  if (t.boundary_input < 0) return p;
  Graph& g = p.graph;
  const NodeId x = t.boundary_input;
  p.boundary_input = x;
  p.entry.insert(x);
  const auto readers = g.uses(TensorRef{x, 0});
  const std::string name = g.node(x).op.name;
  // Fixed ids (kept free by the template), so that every starting point of the piece agrees on
  // them.
  NodeId next = t.entry_base;
  TensorRef cur{x, 0};
  if (layout)
    for (int i = 0; i < layout->rank(); ++i) {
      const int d = layout->dims[i].degree;
      if (d <= 1) continue;
      Operator op{OpType::Partition,
                  {{"dim", std::int64_t{i}}, {"degree", std::int64_t{d}}},
                  fmt::format("{}.arrives{}", name, i)};
      g.insert_unchecked(next, std::move(op), {cur});
      cur = {next++, 0};
      p.entry.insert(cur.node);
    }
  p.identity = next;
  g.insert_unchecked(p.identity, Operator{OpType::Identity, {}, name + ".enter"}, {cur});
  p.entry.insert(p.identity);
  g.infer_shapes();
  const TensorRef converted =
      convert_layout(g, {p.identity, 0}, g.node(x).outputs.at(0), name + ".convert");
  for (const auto& u : readers) g.set_input(u.node, u.slot, converted);
  cancel_inverse_parallel_ops(g);
  return p;
}

std::optional<Graph> data_parallel_body(const SegmentTemplate& t, int degree) {
  try {
    std::set<NodeId> batched;
    if (t.boundary_input >= 0) batched.insert(t.boundary_input);
    return make_data_parallel(t.body, degree, batched);
  } catch (const InputError&) {
    return std::nullopt;
  }
}

const ParallelTensorShape& leaving_layout(const PieceGraph& p) {
  return p.graph.shape(p.graph.node(p.marker).inputs.at(0));
}

double ConversionCosts::seconds(const ParallelTensorShape& from, const ParallelTensorShape& to) {
  if (from.degrees() == to.degrees() && from.replica == to.replica) return 0;
  const auto key = std::make_pair(from.to_string(), to.to_string());
  if (auto it = memo_.find(key); it != memo_.end()) return it->second;
  double seconds = std::numeric_limits<double>::infinity();
  try {
    Graph g;
    const TensorRef x = g.add_input("x", from.sizes(), from.dtype);
    TensorRef cur = x;
    for (int i = 0; i < from.rank(); ++i)
      if (from.dims[i].degree > 1)
        cur = {g.add(Operator{OpType::Partition,
                              {{"dim", std::int64_t{i}},
                               {"degree", std::int64_t{from.dims[i].degree}}},
                              "p"},
                     {cur}),
               0};
    const TensorRef produced{g.add(Operator{OpType::Identity, {}, "produced"}, {cur}), 0};
    convert_layout(g, produced, to, "convert");
    const MappingCost costs(g, model_);
    const MappingEstimate e = estimate_machine_mapping(costs, nullptr);
    if (e.feasible) seconds = e.cost.time();
  } catch (const InputError&) {
    // not convertible (partial sums, replicas): infinitely expensive
  }
  memo_.emplace(key, seconds);
  return seconds;
}

namespace {

// Per node: the hash of everything it reads (like the structural hash) and of everything that reads
// it, so that nodes in equal places of equal graphs get equal keys.
std::map<NodeId, std::pair<std::uint64_t, std::uint64_t>> place_keys(const Graph& g) {
  const auto order = g.topological_order();
  std::map<NodeId, std::uint64_t> up, down;
  for (NodeId id : order) {
    const Node& n = g.node(id);
    Hasher h;
    hash_operator(h, n);
    for (const auto& in : n.inputs) {
      h.u64(up.at(in.node));
      h.i64(in.index);
    }
    up[id] = h.value();
  }
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Hasher h;
    hash_operator(h, g.node(*it));
    std::vector<std::uint64_t> readers;
    for (const auto& u : g.uses(*it)) {
      Hasher r;
      r.u64(down.at(u.node));
      r.u64(static_cast<std::uint64_t>(u.slot));
      r.i64(g.node(u.node).inputs[u.slot].index);
      readers.push_back(r.value());
    }
    std::sort(readers.begin(), readers.end());
    for (auto x : readers) h.u64(x);
    down[*it] = h.value();
  }
  std::map<NodeId, std::pair<std::uint64_t, std::uint64_t>> out;
  for (NodeId id : order) out[id] = {up.at(id), down.at(id)};
  return out;
}

}  // namespace

std::map<NodeId, NodeId> correspondence(const Graph& a, const Graph& b) {
  if (a.size() != b.size()) return {};
  auto group = [](const Graph& g) {
    const auto keys = place_keys(g);
    std::map<std::pair<std::uint64_t, std::uint64_t>, std::vector<NodeId>> out;
    for (NodeId id : g.topological_order()) out[keys.at(id)].push_back(id);
    return out;
  };
  const auto ga = group(a), gb = group(b);
  if (ga.size() != gb.size()) return {};
  std::map<NodeId, NodeId> out;
  for (const auto& [key, nodes] : ga) {
    auto it = gb.find(key);
    if (it == gb.end() || it->second.size() != nodes.size()) return {};
    for (std::size_t i = 0; i < nodes.size(); ++i) out[nodes[i]] = it->second[i];
  }
  return out;
}

std::string rename(const std::string& name, const std::map<std::string, std::string>& names) {
  if (auto it = names.find(name); it != names.end()) return it->second;
  for (auto pos = name.rfind('.'); pos != std::string::npos && pos > 0;
       pos = name.rfind('.', pos - 1)) {
    if (auto it = names.find(name.substr(0, pos)); it != names.end())
      return it->second + name.substr(pos);
    if (pos == 0) break;
  }
  return name;
}

Graph rename_graph(const Graph& g, const std::map<NodeId, NodeId>& ids,
                   const std::map<std::string, std::string>& names) {
  Graph r;
  r.name = g.name;
  r.batch_size = g.batch_size;
  std::set<NodeId> targets;
  for (const auto& [from, to] : ids) targets.insert(to);
  auto map_id = [&](NodeId id) {
    if (auto it = ids.find(id); it != ids.end()) return it->second;
    if (targets.count(id)) throw std::logic_error("renamed piece: node ids collide");
    return id;
  };
  for (NodeId id : g.topological_order()) {
    const Node& n = g.node(id);
    Operator op = n.op;
    op.name = rename(op.name, names);
    std::vector<TensorRef> inputs = n.inputs;
    for (auto& in : inputs) in.node = map_id(in.node);
    r.insert_unchecked(map_id(id), std::move(op), std::move(inputs));
  }
  r.reserve_ids(g.next_id());
  r.infer_shapes();
  return r;
}

Graph glue(const Graph& model, const std::vector<GluePiece>& pieces) {
  Graph f;
  f.name = model.name;
  f.batch_size = model.batch_size;
  f.reserve_ids(model.next_id());
  TensorRef handed{-1, 0};  // the previous piece's result, in the layout this piece entered with
  for (std::size_t k = 0; k < pieces.size(); ++k) {
    const PieceGraph& p = *pieces[k].piece;
    const Graph& g = p.graph;
    std::map<NodeId, NodeId> ids;
    auto map_ref = [&](TensorRef in) {
      return in.node == p.identity ? handed : TensorRef{ids.at(in.node), in.index};
    };
    TensorRef result{-1, 0};
    for (NodeId id : g.topological_order()) {
      if (p.entry.count(id)) continue;
      const Node& n = g.node(id);
      if (id == p.marker) {
        result = map_ref(n.inputs.at(0));
        continue;
      }
      const bool original = pieces[k].t->original.count(id) != 0;
      if (original && f.contains(id)) {  // a source read by more than one piece
        ids[id] = id;
        continue;
      }
      const NodeId to = original ? id : f.next_id();
      std::vector<TensorRef> inputs = n.inputs;
      for (auto& in : inputs) in = map_ref(in);
      f.insert_unchecked(to, n.op, std::move(inputs));
      ids[id] = to;
    }
    f.infer_shapes();
    if (k + 1 < pieces.size()) {
      if (result.node < 0) throw std::logic_error("a piece lost its result");
      handed = convert_layout(
          f, result, pieces[k].leaving,
          pieces[k].t->body.node(pieces[k].t->leaving_producer).op.name + ".handover");
    }
  }
  cancel_inverse_parallel_ops(f);
  f.infer_shapes();
  return f;
}

}  // namespace unity::detail
