#pragma once
// Predicted against measured, per operator: where the cost model is wrong, largest error first,
// for `unity show PLAN --costs --project P` (the project's measured operator profiles) and the
// run view's table and scatter plot (a profiled run).
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "unity/core/cost/cost_model.h"
#include "unity/core/plan/plan.h"
#include "unity/executor/training.h"

namespace unity::use_cases {

struct OperatorTimes {
  NodeId node = -1;
  std::string name;
  std::string op;
  double predicted_ms = 0;  // forward + backward
  double measured_ms = 0;   // forward + backward
  // How far apart, as a factor >= 1 either way (a prediction of 0 against a measurement: inf).
  double error() const;
};

// Each compute operator of the plan that `measured` has a time for: the analytic cost model's
// forward and backward time of one task on the plan's machine beside the measured one, largest
// error first. A pipelined plan compares its segment kinds' operators.
std::vector<OperatorTimes> compare_with_profiles(const Plan& plan, const ProfileSource& measured);

// What the plan predicts for each operator a profiled run measured, in ms, forward and backward:
// a whole-graph plan its own time and its incoming edges' (computation and communication); a
// pipelined plan, by the operator's name, its task's time per micro-batch as the planner costs its
// segment kind, times the micro-batches, the forward twice where full recomputation re-runs it
// (none where the plan keeps no segment plans or splits sequences: context parallelism).
class OperatorPredictions {
 public:
  explicit OperatorPredictions(const Plan& plan);
  std::optional<double> of(const executor::OperatorProfile& measured) const;

 private:
  bool pipelined_ = false;
  std::map<NodeId, double> by_node_;
  std::map<std::string, double> by_name_;
};

// A profiled run of the plan: each operator's measured time (the slowest rank's) beside what the
// plan predicted for it (its own and its incoming edges' time), largest error first.
std::vector<OperatorTimes> compare_with_run(const Plan& plan,
                                            const std::vector<executor::OperatorProfile>& profile);

nlohmann::json operator_times_to_json(const std::vector<OperatorTimes>& rows);

}  // namespace unity::use_cases
