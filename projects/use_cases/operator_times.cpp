#include "unity/use_cases/operator_times.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

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

std::map<NodeId, double> predicted_operator_ms(const Plan& plan) {
  std::map<NodeId, double> out;
  for (const auto& op : plan.mapping.per_op) out[op.node] = (op.own.time() + op.edges.time()) * 1e3;
  return out;
}

std::vector<OperatorTimes> compare_with_run(const Plan& plan,
                                            const std::vector<executor::OperatorProfile>& profile) {
  if (plan.pipeline) return {};  // predicted per stage, not per operator of the whole model
  const auto predicted = predicted_operator_ms(plan);
  std::vector<OperatorTimes> out;
  for (const auto& p : profile) {
    const auto it = predicted.find(p.node);
    if (p.node < 0 || it == predicted.end()) continue;
    out.push_back({p.node, p.name, p.op, it->second, p.forward_ms + p.backward_ms});
  }
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
