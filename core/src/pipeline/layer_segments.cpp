#include "unity/core/pipeline/layer_segments.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "unity/core/errors.h"
#include "unity/core/mapping/mapping_cost.h"
#include "unity/core/ops/attention_core.h"
#include "unity/core/shapes/batch_rescaling.h"
#include "unity/core/shapes/shape_inference.h"

namespace unity {
namespace {

// What counts as a layer: attention operators where the model has them, else operators that read
// a weight.
bool starts_layer(const Graph& g, const Node& n, bool has_attention) {
  if (has_attention) return is_attention(n.op.type);
  return std::any_of(n.inputs.begin(), n.inputs.end(),
                     [&](const TensorRef& t) { return g.node(t.node).op.type == OpType::Weight; });
}

// The sizes of a source for `batch` samples: a leading dim equal to the model's batch follows it.
std::vector<std::int64_t> batched_sizes(const ParallelTensorShape& s, std::int64_t model_batch,
                                        std::int64_t batch) {
  std::vector<std::int64_t> sizes = s.sizes();
  if (!sizes.empty() && model_batch > 0 && sizes[0] == model_batch) sizes[0] = batch;
  return sizes;
}

// A size that holds `from` samples (the batch, or the batch merged with other dims) for `to`.
std::int64_t scaled_by_batch(std::int64_t size, std::int64_t from, std::int64_t to) {
  if (size * to % from != 0)
    throw ShapeError(
        fmt::format("a dim of {} for {} samples does not scale to {} samples", size, from, to));
  return size * to / from;
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
  // Which dim of each segment's input holds the samples: the one that doubles with the batch.
  std::optional<Graph> doubled;
  if (model.batch_size > 0) {
    try {
      doubled = rebatch(model, model.batch_size, 2 * model.batch_size);
    } catch (const ShapeError&) {
      // Some operator holds the batch in a way no other batch fits: the batch stays whole.
    }
  }
  for (auto& s : chain.segments) {
    if (s.input.node < 0) continue;
    s.input_batch_dim = Segment::kUnknownBatchDim;
    if (!doubled) continue;
    const auto was = model.shape(s.input).sizes(), is = doubled->shape(s.input).sizes();
    std::vector<int> grown;
    for (std::size_t d = 0; d < was.size(); ++d)
      if (was[d] != is[d]) grown.push_back(static_cast<int>(d));
    if (grown.empty()) s.input_batch_dim = Segment::kNoBatchDim;
    if (grown.size() == 1 &&
        is[static_cast<std::size_t>(grown[0])] == 2 * was[static_cast<std::size_t>(grown[0])])
      s.input_batch_dim = grown[0];
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

// The nodes `nodes` of `model` as a graph of their own for `batch` samples, reading `input` (the
// activation entering them, if any) as an Input; `output` (if valid) is where it lands.
ChunkGraph sub_graph(const Graph& model, TensorRef input, int input_batch_dim,
                     const std::vector<NodeId>& nodes, TensorRef output, std::int64_t batch) {
  ChunkGraph c;
  Graph& g = c.graph;
  g.name = model.name;
  g.batch_size = batch;
  std::map<TensorRef, TensorRef> mapped;
  if (input.node >= 0) {
    const auto& shape = model.shape(input);
    std::vector<std::int64_t> sizes = shape.sizes();
    const std::string name = model.node(input.node).op.name + ".out";
    if (batch != model.batch_size && input_batch_dim != Segment::kNoBatchDim) {
      if (input_batch_dim < 0)
        throw ShapeError(fmt::format(
            "'{}' [{}] holds the batch of {} samples in no one dim, so it cannot take {}", name,
            fmt::join(sizes, ", "), model.batch_size, batch));
      sizes[static_cast<std::size_t>(input_batch_dim)] = scaled_by_batch(
          sizes[static_cast<std::size_t>(input_batch_dim)], model.batch_size, batch);
    }
    mapped[input] = g.add_input(name, sizes, shape.dtype);
    // Where the samples are, for rebatch(): -1 where the activation does not hold them.
    if (input_batch_dim >= 0 || input_batch_dim == Segment::kNoBatchDim)
      g.mutable_node(mapped[input].node)
          .op.attrs.set("batch_dim", std::int64_t{std::max(input_batch_dim, -1)});
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
      const auto sizes = src.op.type == OpType::Input
                             ? batched_sizes(shape, model.batch_size, batch)
                             : shape.sizes();
      const TensorRef copy =
          src.op.type == OpType::Input    ? g.add_input(src.op.name, sizes, shape.dtype)
          : src.op.type == OpType::Weight ? g.add_weight(src.op.name, sizes, shape.dtype)
                                          : TensorRef{g.add(src.op, {}), 0};
      mapped[in] = copy;
      inputs.push_back(copy);
    }
    std::vector<ParallelTensorShape> before, now;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      before.push_back(model.shape(node.inputs[i]));
      now.push_back(g.shape(inputs[i]));
    }
    const NodeId added = g.add(rebatched_operator(node.op, before, now), std::move(inputs));
    for (int k = 0; k < static_cast<int>(node.outputs.size()); ++k) mapped[{id, k}] = {added, k};
  }
  if (output.node >= 0) c.output = mapped.at(output);
  return c;
}

}  // namespace

Graph segment_graph(const Graph& model, const Segment& s, std::int64_t batch) {
  return sub_graph(model, s.input, s.input_batch_dim, s.nodes, {-1, 0}, batch).graph;
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
  return sub_graph(model, chain.segments[first].input, chain.segments[first].input_batch_dim, nodes,
                   final ? TensorRef{-1, 0} : chain.segments[last].output, batch);
}

Graph rebatch(const Graph& graph, std::int64_t from, std::int64_t to) {
  Graph g = graph;
  g.batch_size = to;
  for (NodeId id : graph.topological_order()) {
    const Node& was = graph.node(id);
    Node& n = g.mutable_node(id);
    std::vector<ParallelTensorShape> before, now;
    for (std::size_t i = 0; i < was.inputs.size(); ++i) {
      before.push_back(graph.shape(was.inputs[i]));
      now.push_back(g.shape(n.inputs[i]));
    }
    if (n.op.type == OpType::Input) {
      // The model's inputs lead with the batch; a segment's activation says where it holds it.
      auto sizes = n.op.attrs.get_ints("shape");
      const auto d = n.op.attrs.has("batch_dim")          ? n.op.attrs.get_int("batch_dim")
                     : !sizes.empty() && sizes[0] == from ? 0
                                                          : -1;
      if (d >= 0 && d < static_cast<std::int64_t>(sizes.size())) {
        sizes[static_cast<std::size_t>(d)] =
            scaled_by_batch(sizes[static_cast<std::size_t>(d)], from, to);
        n.op.attrs.set("shape", sizes);
      }
    } else {
      n.op = rebatched_operator(was.op, before, now);
    }
    try {
      n.outputs = infer_output_shapes(n.op, now);
    } catch (const ShapeError& e) {
      throw ShapeError(fmt::format("{}: {}", g.describe(id), e.what()));
    }
  }
  return g;
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
