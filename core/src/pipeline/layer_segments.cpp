#include "unity/core/pipeline/layer_segments.h"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "unity/core/errors.h"
#include "unity/core/mapping/mapping_cost.h"
#include "unity/core/ops/attention_core.h"

namespace unity {
namespace {

// What counts as a layer: attention operators where the model has them, else operators that read
// a weight.
bool starts_layer(const Graph& g, const Node& n, bool has_attention) {
  if (has_attention) return is_attention(n.op.type);
  return std::any_of(n.inputs.begin(), n.inputs.end(),
                     [&](const TensorRef& t) { return g.node(t.node).op.type == OpType::Weight; });
}

}  // namespace

SegmentChain segment_chain(const Graph& model) {
  SegmentChain chain;
  const PlacementGraph placement(model);
  const auto& order = placement.placed();
  const int n = static_cast<int>(order.size());
  if (n == 0) return chain;
  std::unordered_map<NodeId, int> pos;
  for (int i = 0; i < n; ++i) pos[order[i]] = i;
  // live[i]: producers whose output is still read after position i.
  std::vector<int> starts(n + 1, 0);
  std::vector<int> last_use(n, 0);
  for (int i = 0; i < n; ++i) {
    last_use[i] = i;
    for (NodeId s : placement.successors(order[i])) last_use[i] = std::max(last_use[i], pos[s]);
    if (last_use[i] > i) {
      ++starts[i];
      --starts[last_use[i]];
    }
  }
  const bool has_attention = unity::has_attention(model);
  Segment current;
  int live = 0, layers = 0;
  std::set<int> producers_alive;
  for (int i = 0; i < n; ++i) {
    const Node& node = model.node(order[i]);
    if (starts_layer(model, node, has_attention)) ++layers;
    current.nodes.push_back(order[i]);
    live += starts[i];
    if (last_use[i] > i) producers_alive.insert(i);
    for (auto it = producers_alive.begin(); it != producers_alive.end();)
      it = last_use[*it] <= i ? producers_alive.erase(it) : std::next(it);
    if (i + 1 == n || live != 1) continue;
    // A loss stays with the operator whose output it reads: a head split over the vocabulary
    // feeds a vocabulary-parallel cross-entropy without gathering its logits.
    const OpType next = model.node(order[i + 1]).op.type;
    if (next == OpType::SoftmaxCrossEntropy || next == OpType::MSELoss) continue;
    // One producer is live: a cut if a single one of its outputs is read later.
    const int p = *producers_alive.begin();
    std::set<int> outputs;
    for (int j = i + 1; j < n; ++j)
      for (const auto& in : model.node(order[j]).inputs)
        if (in.node == order[p]) outputs.insert(in.index);
    if (outputs.size() != 1) continue;
    current.output = {order[p], *outputs.begin()};
    chain.segments.push_back(std::move(current));
    current = Segment{};
    current.input = chain.segments.back().output;
    current.layer = layers;
  }
  const auto sinks = model.sinks();
  current.output = sinks.empty() ? TensorRef{current.nodes.back(), 0} : sinks.front();
  chain.segments.push_back(std::move(current));
  chain.layers = layers;
  // Where each segment's input holds the samples, tracked through the model for twice its batch.
  std::map<TensorRef, BatchPlace> places;
  std::string untracked;
  if (model.batch_size > 0) {
    try {
      rebatch(model, model.batch_size, 2 * model.batch_size, &places);
    } catch (const ShapeError& e) {
      // Some operator holds the batch in a way no other batch fits: the batch stays whole.
      untracked = e.what();
    }
  }
  for (auto& s : chain.segments) {
    if (s.input.node < 0) continue;
    const auto it = places.find(s.input);
    if (!untracked.empty() || it == places.end() || !it->second.known) {
      s.input_batch_dim = Segment::kUnknownBatchDim;
      s.input_batch_unknown =
          untracked.empty() ? "its sizes follow the batch, not in one dim" : untracked;
    } else {
      s.input_batch_dim = it->second.dim < 0 ? Segment::kNoBatchDim : it->second.dim;
      s.input_batch_inner = it->second.inner;
    }
  }
  // Kinds: equal structure (at the model's own batch, which every operator accepts: an imported
  // Reshape may hold the batch in its target shape).
  std::map<std::uint64_t, int> kinds;
  for (std::size_t i = 0; i < chain.segments.size(); ++i) {
    auto& s = chain.segments[i];
    const std::uint64_t h = segment_graph(model, s, model.batch_size).structural_hash();
    auto [it, added] = kinds.emplace(h, static_cast<int>(kinds.size()));
    s.kind = it->second;
    if (added) chain.representative.push_back(static_cast<int>(i));
  }
  return chain;
}

std::vector<bool> repeated_kinds(const SegmentChain& chain) {
  std::vector<int> count(static_cast<std::size_t>(chain.kinds()), 0);
  for (const auto& s : chain.segments) ++count[static_cast<std::size_t>(s.kind)];
  std::vector<bool> repeated;
  for (int n : count) repeated.push_back(n > 1);
  return repeated;
}

namespace {

// Where a segment's input holds the samples (Segment::input_batch_dim and _inner).
struct SegmentPlace {
  int dim = 0;
  std::int64_t inner = 1;
  const std::string* unknown = nullptr;  // why, for kUnknownBatchDim
};

// The nodes `nodes` of `model` as a graph of their own for `batch` samples, reading `input` (the
// activation entering them, if any) as an Input; `output` (if valid) is where it lands.
ChunkGraph sub_graph(const Graph& model, TensorRef input, SegmentPlace place,
                     const std::vector<NodeId>& nodes, TensorRef output, std::int64_t batch) {
  ChunkGraph c;
  Graph& g = c.graph;
  g.name = model.name;
  g.batch_size = model.batch_size;  // made as the model is, then rebatched
  std::map<TensorRef, TensorRef> mapped;
  if (input.node >= 0) {
    const auto& shape = model.shape(input);
    mapped[input] =
        g.add_input(model.node(input.node).op.name + ".out", shape.sizes(), shape.dtype);
    // Where the samples are, for rebatch(): dim -1 where the activation holds none.
    if (place.dim >= 0 || place.dim == Segment::kNoBatchDim) {
      auto& attrs = g.mutable_node(mapped[input].node).op.attrs;
      attrs.set("batch_dim", std::int64_t{std::max(place.dim, -1)});
      if (place.dim >= 0 && place.inner != 1) attrs.set("batch_inner", place.inner);
    }
    c.input = mapped[input].node;
  }
  for (NodeId id : nodes) {
    const Node& node = model.node(id);
    std::vector<TensorRef> inputs;
    for (const auto& in : node.inputs) {
      if (auto it = mapped.find(in); it != mapped.end()) {
        inputs.push_back(it->second);
        continue;
      }
      const Node& src = model.node(in.node);
      if (!is_source_op(src.op.type))
        throw GraphError(fmt::format("{} reads {} from outside its segment", model.describe(id),
                                     model.describe(in.node)));
      const auto& shape = src.outputs.at(0);
      const auto sizes = shape.sizes();
      const TensorRef copy =
          src.op.type == OpType::Input    ? g.add_input(src.op.name, sizes, shape.dtype)
          : src.op.type == OpType::Weight ? g.add_weight(src.op.name, sizes, shape.dtype)
                                          : TensorRef{g.add(src.op, {}), 0};
      mapped[in] = copy;
      inputs.push_back(copy);
    }
    const NodeId added = g.add(node.op, std::move(inputs));
    for (int k = 0; k < static_cast<int>(node.outputs.size()); ++k) mapped[{id, k}] = {added, k};
  }
  if (output.node >= 0) c.output = mapped.at(output);
  if (batch != model.batch_size) {
    if (input.node >= 0 && place.dim == Segment::kUnknownBatchDim)
      throw ShapeError(fmt::format(
          "the samples of the batch of {} are lost before '{}', so it cannot take {} ({})",
          model.batch_size, model.node(input.node).op.name, batch,
          place.unknown ? *place.unknown : std::string("unknown")));
    g = rebatch(g, model.batch_size, batch);  // the same node ids
  }
  return c;
}

}  // namespace

Graph segment_graph(const Graph& model, const Segment& s, std::int64_t batch) {
  return sub_graph(model, s.input, {s.input_batch_dim, s.input_batch_inner, &s.input_batch_unknown},
                   s.nodes, {-1, 0}, batch)
      .graph;
}

Graph renamed_kind_plan(const Graph& plan, const Graph& model, const SegmentChain& chain, int seg,
                        std::int64_t batch) {
  const int rep = chain.representative[chain.segments[seg].kind];
  if (rep == seg) return plan;
  const Graph from = segment_graph(model, chain.segments[rep], batch);
  const Graph to = segment_graph(model, chain.segments[seg], batch);
  std::map<std::string, std::string> names;
  auto a = from.nodes().begin();
  auto b = to.nodes().begin();
  for (; a != from.nodes().end() && b != to.nodes().end(); ++a, ++b)
    names[a->second.op.name] = b->second.op.name;
  Graph g = plan;
  for (const auto& [id, n] : plan.nodes()) {
    std::string name = n.op.name;
    if (auto it = names.find(name); it != names.end()) {
      name = it->second;
    } else {
      // The longest mapped name this one extends ("layers.0.attention" + ".pwq").
      std::size_t best = 0;
      for (const auto& [old, fresh] : names)
        if (old.size() > best && name.size() > old.size() &&
            name.compare(0, old.size(), old) == 0 && name[old.size()] == '.') {
          best = old.size();
          name = fresh + n.op.name.substr(old.size());
        }
    }
    g.mutable_node(id).op.name = name;
  }
  return g;
}

ChunkGraph chunk_graph(const Graph& model, const SegmentChain& chain, int first, int last,
                       std::int64_t batch) {
  if (first < 0 || last < first || last >= static_cast<int>(chain.segments.size()))
    throw InputError(
        fmt::format("segments {}-{} are not in a chain of {}", first, last, chain.segments.size()));
  std::vector<NodeId> nodes;
  for (int s = first; s <= last; ++s)
    nodes.insert(nodes.end(), chain.segments[s].nodes.begin(), chain.segments[s].nodes.end());
  const bool final = last + 1 == static_cast<int>(chain.segments.size());
  const Segment& s = chain.segments[first];
  return sub_graph(model, s.input, {s.input_batch_dim, s.input_batch_inner, &s.input_batch_unknown},
                   nodes, final ? TensorRef{-1, 0} : chain.segments[last].output, batch);
}

Graph context_shard(const Graph& graph, std::int64_t sequence, int cp) {
  if (cp <= 1) return graph;
  if (sequence % (2 * cp) != 0)
    throw ShapeError(
        fmt::format("a sequence of {} tokens does not split into 2 x {} chunks", sequence, cp));
  Graph g = graph;
  for (const auto& [id, n] : graph.nodes()) {
    if (is_attention(n.op.type))
      g.mutable_node(id).op.attrs.set("context_parallel", std::int64_t{cp});
    if (n.op.type != OpType::Input) continue;
    auto sizes = n.op.attrs.get_ints("shape");
    if (sizes.size() < 2 || sizes[1] != sequence) continue;
    sizes[1] = sequence / cp;
    g.mutable_node(id).op.attrs.set("shape", sizes);
  }
  g.infer_shapes();
  return g;
}

}  // namespace unity
