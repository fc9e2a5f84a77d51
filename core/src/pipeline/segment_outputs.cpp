#include "unity/core/pipeline/segment_outputs.h"

#include <map>
#include <set>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "unity/core/pcg/graph_builder.h"
#include "unity/core/pcg/training_loss.h"
#include "unity/core/shapes/replica_meaning.h"

namespace unity {

std::vector<TensorRef> handed_on_outputs(const Graph& plan, const Graph& model) {
  std::set<std::pair<std::string, int>> unread;
  for (const TensorRef& s : model.sinks()) unread.emplace(model.node(s.node).op.name, s.index);
  std::vector<TensorRef> out;
  for (const TensorRef& s : plan.sinks()) {
    if (derives_from_loss(plan, s.node) || is_objective(plan, s)) continue;
    if (unread.count({plan.node(s.node).op.name, s.index})) continue;
    out.push_back(s);
  }
  return out;
}

void hand_on_whole(Graph& plan, const Graph& model) {
  GraphBuilder b(plan);
  for (TensorRef t : handed_on_outputs(plan, model)) {
    const std::string name = plan.node(t.node).op.name + ".whole";
    // Partial sums first (Reduce sums the innermost replicas), then the split dims.
    std::map<TensorRef, ReplicaLayout> known;
    for (;;) {
      const ReplicaLayout layout = replica_layout_of(plan, t, known);
      if (layout.factors().empty() || !layout.factors().back().partial) break;
      t = b.reduce(t, layout.factors().back().size, name + "_reduce");
    }
    const ParallelTensorShape shape = plan.shape(t);
    for (int d = 0; d < shape.rank(); ++d)
      if (shape.dims[d].degree > 1)
        t = b.combine(t, d, shape.dims[d].degree, fmt::format("{}{}", name, d));
  }
}

}  // namespace unity
