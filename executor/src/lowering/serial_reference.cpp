#include "unity/executor/reference.h"

namespace unity::executor {

Graph serial_reference(const Graph& pcg) {
  Graph g = pcg;
  // Reverse topological order: a parallel op's consumers are rewired before it is removed.
  const auto order = g.topological_order();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const Node& n = g.node(*it);
    if (!is_parallel_op(n.op.type)) continue;
    const TensorRef input = n.inputs.at(0);
    g.replace_uses({n.id, 0}, input);
    g.remove(n.id);
  }
  // A Concat in pieces is a layout too: the reference concatenates on one device.
  for (NodeId id : order)
    if (g.contains(id) && g.node(id).op.type == OpType::Concat)
      g.mutable_node(id).op.attrs.erase("pieces");
  g.infer_shapes();
  return g;
}

}  // namespace unity::executor
