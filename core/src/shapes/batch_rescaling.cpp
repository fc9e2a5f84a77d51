#include "unity/core/shapes/batch_rescaling.h"

#include <fmt/format.h>

#include "unity/core/errors.h"
#include "unity/core/shapes/shape_inference.h"

namespace unity {
namespace {

using Sizes = std::vector<std::int64_t>;

std::int64_t product(const Sizes& v, std::size_t begin) {
  std::int64_t p = 1;
  for (std::size_t i = begin; i < v.size(); ++i) p *= v[i];
  return p;
}

[[noreturn]] void unfit(const Operator& op, const std::string& why) {
  throw ShapeError(fmt::format("'{}' ({}) holds sizes of the batch it was imported with: {}",
                               op.name, to_string(op.type), why));
}

// A size that holds `from` samples (the batch, or the batch merged with other dims) for `to`.
std::int64_t scaled(const Operator& op, std::int64_t size, std::int64_t from, std::int64_t to) {
  if (size * to % from != 0)
    unfit(op, fmt::format("a size of {} for {} samples does not scale to {}", size, from, to));
  return size * to / from;
}

struct Rescaling {
  std::int64_t from, to;
};

// A Reshape moves the samples' block of elements, [inner x stride, inner x stride x samples) in
// row-major order, into the output dim whose own block holds it; that dim takes the new count.
Operator rebatched_reshape(const Operator& op, const Sizes& before, const BatchPlace& place,
                           Rescaling r, BatchPlace& out) {
  Sizes target = op.attrs.get_ints("shape");
  const auto c = static_cast<std::size_t>(place.dim);
  const std::int64_t start = place.inner * product(before, c + 1), end = start * r.from;
  std::vector<std::size_t> holders;
  for (std::size_t o = 0; o < target.size(); ++o) {
    const std::int64_t stride = product(target, o + 1);
    if (stride <= start && start % stride == 0 && end <= stride * target[o]) holders.push_back(o);
  }
  // One sample's block is empty: [8, 1, 32] -> [8, 4, 8] may put it before the heads or be dim 0.
  if (r.from == 1 && holders.size() > 1)
    unfit(op, fmt::format("[{}] -> [{}] does not say where one sample goes",
                          fmt::join(before, ", "), fmt::join(target, ", ")));
  if (!holders.empty()) {
    const std::size_t o = holders.front();
    const std::int64_t stride = product(target, o + 1);
    target[o] = scaled(op, target[o], r.from, r.to);
    out = {static_cast<int>(o), start / stride, true};
    Operator rebatched = op;
    rebatched.attrs.set("shape", target);
    return rebatched;
  }
  unfit(op, fmt::format("no dim of [{}] holds the samples of dim {} of [{}]",
                        fmt::join(target, ", "), place.dim, fmt::join(before, ", ")));
}

// `op` for inputs now holding `r.to` samples; the place of its first output in `out`.
Operator rebatched_operator(const Operator& op, const std::vector<ParallelTensorShape>& before,
                            const std::vector<ParallelTensorShape>& now,
                            const std::vector<BatchPlace>& places, Rescaling r, BatchPlace& out) {
  Operator rebatched = op;
  if (before.empty() || (places[0].known && places[0].dim < 0)) return rebatched;
  if (!places[0].known) {
    if (op.type == OpType::Reshape || op.type == OpType::Flatten)
      unfit(op, "where its input holds the samples is not known");
    return rebatched;
  }
  const Sizes was = before[0].sizes(), is = now[0].sizes();
  const auto d = static_cast<std::size_t>(places[0].dim);
  switch (op.type) {
    case OpType::Reshape:
      return rebatched_reshape(op, was, places[0], r, out);
    case OpType::Flatten: {
      // A Reshape to [dims before the axis, dims from it].
      const auto axis = static_cast<std::size_t>(op.attrs.get_int("axis", 1));
      Operator as_reshape{OpType::Reshape, {}, op.name};
      as_reshape.attrs.set(
          "shape", Sizes{product(Sizes(was.begin(), was.begin() + axis), 0), product(was, axis)});
      rebatched_reshape(as_reshape, was, places[0], r, out);
      return rebatched;
    }
    case OpType::Transpose: {
      const Sizes perm = op.attrs.get_ints("perm");
      for (std::size_t j = 0; j < perm.size(); ++j)
        if (perm[j] == places[0].dim) out = {static_cast<int>(j), places[0].inner, true};
      return rebatched;
    }
    case OpType::Expand: {
      // The samples' dim, which the input holds (not broadcast from 1), follows the input.
      Sizes target = op.attrs.get_ints("shape");
      const std::size_t offset = target.size() - was.size();
      target[d + offset] = is[d];
      rebatched.attrs.set("shape", target);
      break;
    }
    case OpType::Split: {
      const auto rank = static_cast<std::int64_t>(was.size());
      std::int64_t axis = op.attrs.get_int("axis");
      if (axis < 0) axis += rank;
      if (axis != places[0].dim) break;
      Sizes sizes = op.attrs.get_ints("sizes");
      for (auto& s : sizes) s = scaled(op, s, r.from, r.to);
      rebatched.attrs.set("sizes", sizes);
      break;
    }
    case OpType::Resize: {
      // The samples' axis, resized to its own size (the identity), keeps following the input.
      const Sizes axes = op.attrs.get_ints("axes");
      Sizes sizes = op.attrs.get_ints("sizes");
      for (std::size_t i = 0; i < axes.size() && i < sizes.size(); ++i)
        if (axes[i] == places[0].dim && sizes[i] == was[d]) sizes[i] = is[d];
      rebatched.attrs.set("sizes", sizes);
      break;
    }
    default:
      break;
  }
  return rebatched;
}

// Where an output holds the samples: the one dim whose size changed with them, with the `inner`
// of an input holding them in a dim of that size (an operator keeps a dim it does not change),
// or 1 where the dim is the samples themselves.
BatchPlace place_of(const Sizes& was, const Sizes& is, const std::vector<BatchPlace>& in_places,
                    const std::vector<ParallelTensorShape>& in_before, Rescaling r) {
  std::vector<std::size_t> changed;
  for (std::size_t i = 0; i < was.size() && i < is.size(); ++i)
    if (was[i] != is[i]) changed.push_back(i);
  if (changed.empty()) return {-1, 1, true};
  if (changed.size() > 1) return {-1, 1, false};
  const std::size_t d = changed[0];
  for (std::size_t k = 0; k < in_places.size(); ++k) {
    const BatchPlace& p = in_places[k];
    if (!p.known || p.dim < 0) continue;
    const Sizes sizes = in_before[k].sizes();
    if (sizes[static_cast<std::size_t>(p.dim)] == was[d])
      return {static_cast<int>(d), p.inner, true};
  }
  if (was[d] == r.from) return {static_cast<int>(d), 1, true};
  return {static_cast<int>(d), 1, false};
}

}  // namespace

Graph rebatch(const Graph& graph, std::int64_t from, std::int64_t to,
              std::map<TensorRef, BatchPlace>* places) {
  const Rescaling r{from, to};
  Graph g = graph;
  g.batch_size = to;
  std::map<TensorRef, BatchPlace> local;
  auto& place = places ? *places : local;
  for (NodeId id : graph.topological_order()) {
    const Node& was = graph.node(id);
    Node& n = g.mutable_node(id);
    std::vector<ParallelTensorShape> before, now;
    std::vector<BatchPlace> in_places;
    for (std::size_t i = 0; i < was.inputs.size(); ++i) {
      before.push_back(graph.shape(was.inputs[i]));
      now.push_back(g.shape(n.inputs[i]));
      in_places.push_back(place.at(was.inputs[i]));
    }
    BatchPlace out{-1, 1, true};
    bool placed = false;
    try {
      if (n.op.type == OpType::Input) {
        // The model's inputs lead with the batch; a segment's activation says where it holds it.
        Sizes sizes = n.op.attrs.get_ints("shape");
        const auto dim = n.op.attrs.has("batch_dim")          ? n.op.attrs.get_int("batch_dim")
                         : !sizes.empty() && sizes[0] == from ? 0
                                                              : -1;
        if (dim >= 0 && dim < static_cast<std::int64_t>(sizes.size())) {
          auto& size = sizes[static_cast<std::size_t>(dim)];
          size = scaled(n.op, size, from, to);
          n.op.attrs.set("shape", sizes);
          out = {static_cast<int>(dim), n.op.attrs.get_int("batch_inner", 1), true};
        }
        placed = true;
      } else {
        n.op = rebatched_operator(was.op, before, now, in_places, r, out);
        placed = out.dim >= 0;
      }
      n.outputs = infer_output_shapes(n.op, now);
    } catch (const ShapeError& e) {
      throw ShapeError(fmt::format("{}: {}", g.describe(id), e.what()));
    }
    for (std::size_t k = 0; k < n.outputs.size(); ++k)
      place[{id, static_cast<int>(k)}] =
          placed && k == 0
              ? out
              : place_of(was.outputs[k].sizes(), n.outputs[k].sizes(), in_places, before, r);
  }
  return g;
}

}  // namespace unity
