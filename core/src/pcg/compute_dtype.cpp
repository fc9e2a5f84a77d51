#include "unity/core/pcg/compute_dtype.h"

#include <optional>

namespace unity {

DataType compute_dtype(const Graph& graph) {
  std::optional<DataType> input;
  for (const auto& [id, n] : graph.nodes()) {
    if (!is_source_op(n.op.type) || n.outputs.empty() || !is_floating(n.outputs[0].dtype)) continue;
    if (n.op.type == OpType::Weight) return n.outputs[0].dtype;
    if (!input) input = n.outputs[0].dtype;
  }
  return input.value_or(DataType::Float32);
}

void set_compute_dtype(Graph& graph, DataType dtype) {
  bool changed = false;
  for (const auto& [id, n] : graph.nodes()) {
    if (!is_source_op(n.op.type) || n.outputs.empty() || !is_floating(n.outputs[0].dtype)) continue;
    if (n.outputs[0].dtype == dtype) continue;
    graph.mutable_node(id).op.attrs.set("dtype", std::string(to_string(dtype)));
    changed = true;
  }
  if (changed) graph.infer_shapes();
}

}  // namespace unity
