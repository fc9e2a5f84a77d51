#include "unity/core/pcg/compute_dtype.h"

#include <algorithm>
#include <optional>

#include "unity/core/ops/attention_core.h"

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

void set_fp8_gemms(Graph& graph) {
  set_compute_dtype(graph, DataType::BFloat16);
  for (const auto& [id, n] : graph.nodes())
    if (n.op.type == OpType::Linear || is_attention(n.op.type) || n.op.type == OpType::Experts)
      graph.mutable_node(id).op.attrs.set("fp8", std::int64_t{1});
}

bool has_fp8_gemms(const Node& node) { return node.op.attrs.get_int("fp8", 0) != 0; }

bool has_fp8_gemms(const Graph& graph) {
  return std::any_of(graph.nodes().begin(), graph.nodes().end(),
                     [](const auto& entry) { return has_fp8_gemms(entry.second); });
}

void apply_dtype_name(Graph& graph, const std::string& name) {
  if (name == "fp8" || name == "float8") {
    set_fp8_gemms(graph);
    return;
  }
  set_compute_dtype(graph, data_type_from_string(name));
}

}  // namespace unity
