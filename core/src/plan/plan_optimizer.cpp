#include "unity/core/plan_optimizer.h"

#include <chrono>

#include <fmt/format.h>

#include "unity/core/data_parallel.h"
#include "unity/core/errors.h"
#include "unity/core/model_loader.h"
#include "unity/core/model_zoo.h"

namespace unity {

Graph load_model_for_devices(const std::string& spec, int devices) {
  if (zoo::has_model(spec)) {
    for (const auto& m : zoo::models())
      if (m.name == spec) return zoo::build(spec, m.default_batch * devices);
  }
  return load_model(spec);
}

Plan optimize_plan(const Graph& model, const MachineSpec& machine, const OptimizeOptions& options) {
  const auto started = std::chrono::steady_clock::now();
  const int devices = machine.num_devices();
  Plan plan;
  plan.machine = machine;
  if (options.mode == "data-parallel") {
    plan.pcg = make_data_parallel(model, devices);
  } else {
    throw InputError(fmt::format("unknown mode '{}' (this build supports: data-parallel)", options.mode));
  }
  const CostModel model_costs(machine, optimizer_from_string(options.optimizer));
  const MappingCost costs(plan.pcg, model_costs);
  plan.mapping = optimize_machine_mapping(costs);
  if (!plan.mapping.feasible)
    throw InputError(fmt::format("no machine mapping of '{}' fits {} devices", model.name, devices));
  const auto elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started);

  auto& s = plan.summary;
  s.model = model.name;
  s.machine = machine.name;
  s.devices = devices;
  s.mode = options.mode;
  s.optimizer = options.optimizer;
  s.iteration_time_ms = plan.mapping.cost.time() * 1e3;
  s.compute_ms = plan.mapping.cost.compute * 1e3;
  s.communication_ms = plan.mapping.cost.communication * 1e3;
  s.communication_bytes = plan.mapping.cost.bytes;
  s.peak_memory_bytes = plan.mapping.peak_memory;
  s.fits_in_memory = plan.mapping.fits_in_memory;
  s.search_seconds = elapsed.count();
  s.candidates_evaluated = 1;
  s.mapping_subproblems = plan.mapping.subproblems;
  for (const auto& [id, n] : plan.pcg.nodes()) {
    if (is_compute_op(n.op.type)) ++s.operators;
    if (is_parallel_op(n.op.type)) ++s.parallel_operators;
  }
  return plan;
}

}  // namespace unity
