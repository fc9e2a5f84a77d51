#include "unity/core/pcg/dot_export.h"

#include <fmt/format.h>

namespace unity {
namespace {

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

// The paper's colours: compute operators green, parallel operators orange; tensors entering the
// graph are plain boxes.
const char* fill_colour(OpType t) {
  switch (op_info(t).category) {
    case OpCategory::Parallel:
      return "#f6b26b";
    case OpCategory::Compute:
      return "#93c47d";
    default:
      return "#eeeeee";
  }
}

}  // namespace

std::string graph_to_dot(const Graph& g) {
  std::string out = fmt::format("digraph \"{}\" {{\n", escape(g.name.empty() ? "pcg" : g.name));
  out += "  rankdir=TB;\n  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\"];\n";
  out += "  edge [fontname=\"Helvetica\", fontsize=9];\n";
  for (NodeId id : g.topological_order()) {
    const Node& n = g.node(id);
    std::string label = fmt::format("{}\\n{}", escape(n.op.name), to_string(n.op.type));
    if (is_source_op(n.op.type) && !n.outputs.empty())
      label += "\\n" + escape(n.outputs[0].to_string());
    out += fmt::format("  n{} [label=\"{}\", fillcolor=\"{}\"{}];\n", id, label,
                       fill_colour(n.op.type),
                       is_source_op(n.op.type) ? ", shape=note, fontsize=10" : "");
  }
  for (NodeId id : g.topological_order()) {
    const Node& n = g.node(id);
    for (const auto& in : n.inputs) {
      const auto& s = g.shape(in);
      out += fmt::format("  n{} -> n{} [label=\"{}\"];\n", in.node, id, escape(s.to_string()));
    }
  }
  out += "}\n";
  return out;
}

}  // namespace unity
