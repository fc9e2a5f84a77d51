#include "unity/core/pipeline/expert_load.h"

#include <vector>

namespace unity {

void cost_experts_as_planned(Graph& segment_plan, int expert_parallel, const ExpertLoad& load) {
  std::vector<NodeId> experts;
  for (const auto& [id, n] : segment_plan.nodes())
    if (n.op.type == OpType::Experts) experts.push_back(id);
  for (NodeId id : experts) {
    const int held = segment_plan.shape(segment_plan.node(id).inputs[2]).dims[0].degree;
    auto& attrs = segment_plan.mutable_node(id).op.attrs;
    if (expert_parallel > 1 && expert_parallel % held == 0 && expert_parallel > held)
      attrs.set("expert_parallel", std::int64_t{expert_parallel / held});
    const double factor = load.factor(expert_parallel > 1 || held > 1);
    if (factor != 1) attrs.set("expert_load", factor);
  }
}

}  // namespace unity
