#include "unity/core/search/layout_conversion.h"

#include <fmt/format.h>

#include "unity/core/errors.h"

namespace unity {

TensorRef convert_layout(Graph& g, TensorRef from, const ParallelTensorShape& target,
                         const std::string& name) {
  const ParallelTensorShape source = g.shape(from);
  if (source.sizes() != target.sizes())
    throw ShapeError(fmt::format("cannot convert {} to {}: sizes differ", source.to_string(),
                                 target.to_string()));
  if (source.replica != 1 || target.replica != 1)
    throw ShapeError(fmt::format("cannot convert {} to {}: partial sums or replicas",
                                 source.to_string(), target.to_string()));
  TensorRef t = from;
  auto op = [&](OpType type, int dim, int degree) {
    Operator o{
        type,
        {{"dim", std::int64_t{dim}}, {"degree", std::int64_t{degree}}},
        fmt::format("{}.{}{}", name, type == OpType::Combine ? "combine" : "partition", dim)};
    t = {g.add(std::move(o), {t}), 0};
  };
  // Combines first: the tensor never has more pieces than at either end.
  std::vector<int> degree = source.degrees();
  for (int i = 0; i < source.rank(); ++i) {
    const int d = target.dims[i].degree;
    if (degree[i] == d || degree[i] == 1 || d % degree[i] == 0) continue;
    const int by = degree[i] % d == 0 ? degree[i] / d : degree[i];
    op(OpType::Combine, i, by);
    degree[i] /= by;
  }
  for (int i = 0; i < source.rank(); ++i) {
    const int d = target.dims[i].degree;
    if (degree[i] == d) continue;
    op(OpType::Partition, i, d / degree[i]);
    degree[i] = d;
  }
  return t;
}

int cancel_inverse_parallel_ops(Graph& g) {
  int removed = 0;
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto& [id, n] : g.nodes()) {
      const bool part = n.op.type == OpType::Partition, comb = n.op.type == OpType::Combine;
      if (!part && !comb) continue;
      const Node& inner = g.node(n.inputs.at(0).node);
      const OpType inverse = part ? OpType::Combine : OpType::Partition;
      if (inner.op.type != inverse) continue;
      if (inner.op.attrs.get_int("dim") != n.op.attrs.get_int("dim") ||
          inner.op.attrs.get_int("degree") != n.op.attrs.get_int("degree"))
        continue;
      if (g.uses(inner.id).size() != 1) continue;
      const TensorRef source = inner.inputs.at(0);
      const NodeId outer_id = id, inner_id = inner.id;
      g.replace_uses({outer_id, 0}, source);
      g.remove(outer_id);
      g.remove(inner_id);
      ++removed;
      changed = true;
      break;
    }
  }
  return removed;
}

std::vector<std::int64_t> useful_degrees(const MachineSpec& machine) {
  const int n = machine.num_devices();
  const int per_node = machine.devices_per_node;
  std::vector<std::int64_t> out;
  for (int d = 2; d <= n; ++d) {
    if (n % d != 0) continue;
    if (per_node % d == 0 || d % per_node == 0) out.push_back(d);
  }
  return out;
}

std::vector<ParallelTensorShape> boundary_layouts(const std::vector<std::int64_t>& sizes,
                                                  DataType dtype, const MachineSpec& machine) {
  const ParallelTensorShape serial = ParallelTensorShape::serial(sizes, dtype);
  std::vector<ParallelTensorShape> out{serial};
  const auto degrees = useful_degrees(machine);
  for (std::size_t i = 0; i < sizes.size(); ++i)
    for (auto d : degrees) {
      if (i > 0 && machine.devices_per_node % d != 0) continue;
      if (sizes[i] % d != 0) continue;
      ParallelTensorShape s = serial;
      s.dims[i].degree = static_cast<int>(d);
      out.push_back(s);
    }
  return out;
}

std::string layout_label(const ParallelTensorShape& layout) {
  std::string s = "[";
  for (std::size_t i = 0; i < layout.dims.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(layout.dims[i].size);
    if (layout.dims[i].degree > 1) s += "/" + std::to_string(layout.dims[i].degree);
  }
  return s + "]";
}

}  // namespace unity
