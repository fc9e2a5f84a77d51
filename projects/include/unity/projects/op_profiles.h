#pragma once
// Measured operator times from a project, as the cost model's ProfileSource: when a project is
// open, a task whose operator, attributes and piece shapes were measured on that device type costs
// what was measured instead of the analytic roofline.
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "unity/core/cost/cost_model.h"
#include "unity/core/cost/op_profile_key.h"
#include "unity/projects/records.h"

namespace unity::projects {

class Project;

class ProjectProfileSource : public ProfileSource {
 public:
  explicit ProjectProfileSource(const std::vector<OpProfile>& profiles);
  // The project's profiles as they are now (later changes to the project are not seen).
  static std::shared_ptr<const ProjectProfileSource> load(const Project& project);

  std::optional<OpTimes> lookup(const Graph& graph, NodeId node,
                                const DeviceSpec& device) const override;
  std::size_t size() const { return times_.size(); }
  bool empty() const { return times_.empty(); }

 private:
  std::map<std::pair<std::string, std::string>, OpTimes, std::less<>> times_;  // (device, key)
  std::set<std::string, std::less<>> op_names_;  // op types with any profile: a cheap first test
};

}  // namespace unity::projects
