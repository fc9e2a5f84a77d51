// torch's nn.MultiheadAttention (and any nn.Linear applied to a flattened batch) exports its output
// projection as Reshape [s, n*h, d] -> [s*n, e], Linear, Reshape back to [s, n, e]. A Linear works
// on every row of its input alike, so the Linear can take the unflattened [s, n, e] directly: the
// flattening Reshape then only splits n*h, and the Reshape back disappears. That matters beyond
// tidiness: merging s and n into one dim cuts a partition of n into strided pieces, so the
// flattened form cannot stay batch-partitioned and a data-parallel plan of the model would not
// exist.
#include <optional>

#include "onnx/import_context.h"

namespace unity::onnxio {
namespace {

using Ints = std::vector<std::int64_t>;

std::int64_t product(const Ints& v, std::size_t count) {
  std::int64_t p = 1;
  for (std::size_t i = 0; i < count; ++i) p *= v[i];
  return p;
}

// The one reader of `t`, when exactly one node reads it once.
std::optional<Use> sole_use(const Graph& g, TensorRef t) {
  const auto uses = g.uses(t);
  if (uses.size() != 1) return std::nullopt;
  return uses.front();
}

}  // namespace

void fold_row_reshapes(ImportContext& ctx) {
  Graph& g = ctx.graph();
  std::vector<NodeId> reshapes, folded;
  for (const auto& [id, n] : g.nodes())
    if (n.op.type == OpType::Reshape) reshapes.push_back(id);
  for (const NodeId flatten : reshapes) {
    if (!g.contains(flatten)) continue;
    const TensorRef flat{flatten, 0};
    const auto linear_use = sole_use(g, flat);
    if (!linear_use || linear_use->slot != 0) continue;
    const Node& linear = g.node(linear_use->node);
    if (linear.op.type != OpType::Linear) continue;
    const auto back_use = sole_use(g, {linear.id, 0});
    if (!back_use) continue;
    const Node& back = g.node(back_use->node);
    if (back.op.type != OpType::Reshape || g.uses(back.id).empty()) continue;
    const Ints rows = g.shape(flat).sizes(), unflat = back.op.attrs.get_ints("shape");
    const Ints out = g.shape({linear.id, 0}).sizes();
    if (rows.size() < 2 || unflat.size() < 2 || unflat.back() != out.back() ||
        product(rows, rows.size() - 1) != product(unflat, unflat.size() - 1))
      continue;
    Ints target(unflat.begin(), unflat.end() - 1);
    target.push_back(rows.back());
    const NodeId linear_id = linear.id, back_id = back.id;
    g.mutable_node(flatten).op.attrs.set("shape", target);
    g.replace_uses({back_id, 0}, {linear_id, 0});
    g.remove(back_id);
    folded.push_back(flatten);
  }
  if (folded.empty()) return;
  g.infer_shapes();
  // A flattening Reshape left as the identity goes too.
  for (const NodeId flatten : folded) {
    const Node& n = g.node(flatten);
    if (g.shape(n.inputs[0]).sizes() != g.shape({flatten, 0}).sizes()) continue;
    g.replace_uses({flatten, 0}, n.inputs[0]);
    g.remove(flatten);
  }
}

}  // namespace unity::onnxio
