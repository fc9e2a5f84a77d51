#pragma once
// Predicted against measured, per operator: where the cost model is wrong, largest error first,
// for `unity show PLAN --costs --project P` (the project's measured operator profiles) and the
// run view's table and scatter plot (a profiled run).
#include <map>
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

// What the plan predicts for each of its operators, forward and backward: its own time and its
// incoming edges' (computation and communication), in ms.
std::map<NodeId, double> predicted_operator_ms(const Plan& plan);

// A pipelined plan's prediction for each operator of its model (by name) as a profiled run sums
// it: its task's forward and backward per micro-batch as the planner costs its segment kind, times
// the micro-batches, the forward twice where full recomputation re-runs it. Empty where the plan
// keeps no segment plans or splits sequences (context parallelism).
std::map<std::string, double> predicted_pipeline_operator_ms(const Plan& plan);

// A profiled run of the plan: each operator's measured time (the slowest rank's) beside what the
// plan predicted for it (its own and its incoming edges' time), largest error first.
std::vector<OperatorTimes> compare_with_run(const Plan& plan,
                                            const std::vector<executor::OperatorProfile>& profile);

nlohmann::json operator_times_to_json(const std::vector<OperatorTimes>& rows);

}  // namespace unity::use_cases
