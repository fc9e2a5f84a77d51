#include "unity/use_cases/operator_times.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "unity/core/pipeline/expert_load.h"
#include "unity/core/pipeline/layer_segments.h"
#include "unity/core/search/candidate_cost.h"
#include "unity/executor/pipeline_training.h"

namespace unity::use_cases {
namespace {

void sort_by_error(std::vector<OperatorTimes>& rows) {
  std::stable_sort(rows.begin(), rows.end(), [](const OperatorTimes& a, const OperatorTimes& b) {
    return a.error() > b.error();
  });
}

void compare_graph(const Graph& pcg, const std::map<NodeId, MachineView>& views,
                   const MachineSpec& machine, const CostModel& analytic,
                   const ProfileSource& measured, std::vector<OperatorTimes>& out) {
  for (const auto& [id, n] : pcg.nodes()) {
    if (!is_compute_op(n.op.type)) continue;
    const auto view = views.find(id);
    const int device =
        view != views.end() && view->second.num_tasks() > 0 ? view->second.device(0) : 0;
    const DeviceSpec& spec = machine.device(device);
    const auto m = measured.lookup(pcg, id, spec);
    if (!m) continue;
    const OpTimes p = analytic.task_times(pcg, id, spec);
    out.push_back({id, n.op.name, std::string(to_string(n.op.type)), (p.forward + p.backward) * 1e3,
                   (m->forward + m->backward) * 1e3});
  }
}

// OperatorPredictions' of a pipelined plan, by operator name.
std::map<std::string, double> pipeline_operator_ms(const Plan& plan) {
  std::map<std::string, double> out;
  if (!plan.pipeline) return out;
  const PipelinePlan& pp = *plan.pipeline;
  // The sequence-sharded segment plans the planner costs with context parallelism are not kept.
  if (pp.kind_plans.empty() || pp.context_parallel > 1) return out;
  const Graph model = executor::pipeline_model(plan);
  const SegmentChain chain = segment_chain(model);
  if (chain.kinds() != static_cast<int>(pp.kind_plans.size())) return out;
  const std::vector<bool> repeated = repeated_kinds(chain);
  // As the planner prices a segment kind (pipeline_planner.cpp): on the replica's devices, each
  // Experts task at its expert-parallel shape and stated load, the update left to the stage.
  CostModel costs(select_machine(plan.machine, {0, pp.tensor_parallel}),
                  optimizer_from_string(plan.summary.optimizer));
  costs.set_counts_weight_updates(false);
  struct Times {
    double forward = 0, backward = 0, communication = 0;  // a micro-batch's
  };
  std::vector<std::map<NodeId, Times>> by_kind;
  for (const auto& kind : pp.kind_plans) {
    Graph g = kind.pcg;
    cost_experts_as_planned(g, pp.expert_parallel, pp.expert_load);
    auto& times = by_kind.emplace_back();
    const CandidateCost cost = cost_candidate(g, costs);
    // A parallel operator's collective, and what moves into an operator, are its communication.
    for (const auto& op : cost.mapping.per_op)
      times[op.node] = {op.forward, op.backward, op.own.communication + op.edges.communication};
  }
  // A segment's operators are its kind's plan's, parallel ones included, under the names the
  // executor runs them by there (renamed_kind_plan).
  const bool recomputes = pp.recompute == Recompute::Full;
  for (int seg = 0; seg < static_cast<int>(chain.segments.size()); ++seg) {
    const int kind = chain.segments[seg].kind;
    const Graph named = renamed_kind_plan(pp.kind_plans[static_cast<std::size_t>(kind)].pcg, model,
                                          chain, seg, pp.micro_batch_size);
    const double passes = recomputes && repeated[static_cast<std::size_t>(kind)] ? 2.0 : 1.0;
    for (const auto& [id, t] : by_kind[static_cast<std::size_t>(kind)])
      out[named.node(id).op.name] =
          pp.micro_batches * (passes * t.forward + t.backward + t.communication) * 1e3;
  }
  return out;
}

// OperatorPredictions' of a whole-graph plan, by node.
std::map<NodeId, double> operator_ms(const Plan& plan) {
  std::map<NodeId, double> out;
  for (const auto& op : plan.mapping.per_op) out[op.node] = (op.own.time() + op.edges.time()) * 1e3;
  return out;
}

}  // namespace

double OperatorTimes::error() const {
  const double lo = std::min(predicted_ms, measured_ms), hi = std::max(predicted_ms, measured_ms);
  if (hi <= 0) return 1.0;
  return lo > 0 ? hi / lo : std::numeric_limits<double>::infinity();
}

std::vector<OperatorTimes> compare_with_profiles(const Plan& plan, const ProfileSource& measured) {
  const CostModel analytic(plan.machine, optimizer_from_string(plan.summary.optimizer));
  std::vector<OperatorTimes> out;
  if (plan.pipeline && !plan.pipeline->kind_plans.empty()) {
    for (const auto& kind : plan.pipeline->kind_plans)
      compare_graph(kind.pcg, kind.views, plan.machine, analytic, measured, out);
  } else {
    compare_graph(plan.pcg, plan.mapping.views, plan.machine, analytic, measured, out);
  }
  sort_by_error(out);
  return out;
}

OperatorPredictions::OperatorPredictions(const Plan& plan) : pipelined_(plan.pipeline.has_value()) {
  if (pipelined_)
    by_name_ = pipeline_operator_ms(plan);
  else
    by_node_ = operator_ms(plan);
}

std::optional<double> OperatorPredictions::of(const executor::OperatorProfile& measured) const {
  if (measured.op.empty())
    return std::nullopt;  // the run's own entries (all-reduce, update, other)
  if (pipelined_) {
    const auto it = by_name_.find(measured.name);
    return it == by_name_.end() ? std::nullopt : std::optional<double>(it->second);
  }
  const auto it = by_node_.find(measured.node);
  return it == by_node_.end() ? std::nullopt : std::optional<double>(it->second);
}

std::vector<OperatorTimes> compare_with_run(const Plan& plan,
                                            const std::vector<executor::OperatorProfile>& profile) {
  const OperatorPredictions predicted(plan);
  std::vector<OperatorTimes> out;
  for (const auto& p : profile)
    if (const auto ms = predicted.of(p))
      out.push_back({p.node, p.name, p.op, *ms, p.forward_ms + p.backward_ms});
  sort_by_error(out);
  return out;
}

nlohmann::json operator_times_to_json(const std::vector<OperatorTimes>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : rows) {
    const double e = r.error();
    out.push_back({{"node", r.node},
                   {"name", r.name},
                   {"op", r.op},
                   {"predicted_ms", r.predicted_ms},
                   {"measured_ms", r.measured_ms},
                   {"error_factor", std::isfinite(e) ? nlohmann::json(e) : nlohmann::json()}});
  }
  return out;
}

}  // namespace unity::use_cases
