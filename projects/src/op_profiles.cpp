#include "unity/projects/op_profiles.h"

#include "unity/projects/project.h"

namespace unity::projects {

ProjectProfileSource::ProjectProfileSource(const std::vector<OpProfile>& profiles) {
  for (const auto& p : profiles) {
    times_[{p.device, p.op_key}] = OpTimes{p.forward_s, p.backward_s};
    op_names_.insert(p.op_key.substr(0, p.op_key.find('(')));
  }
}

std::shared_ptr<const ProjectProfileSource> ProjectProfileSource::load(const Project& project) {
  return std::make_shared<const ProjectProfileSource>(project.op_profiles());
}

std::optional<OpTimes> ProjectProfileSource::lookup(const Graph& graph, NodeId node,
                                                    const DeviceSpec& device) const {
  // Operators only: a parallel operator's measured collective is not a task time.
  if (times_.empty() || !is_compute_op(graph.node(node).op.type)) return std::nullopt;
  // The cost model asks for every task of every candidate: skip building the key for op types
  // nothing was measured for.
  if (!op_names_.contains(to_string(graph.node(node).op.type))) return std::nullopt;
  const auto it = times_.find(std::pair{device.name, op_profile_key(graph, node)});
  if (it == times_.end()) return std::nullopt;
  return it->second;
}

}  // namespace unity::projects
