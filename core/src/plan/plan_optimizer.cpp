#include "unity/core/plan_optimizer.h"

#include <chrono>

#include <fmt/format.h>

#include "unity/core/data_parallel.h"
#include "unity/core/errors.h"
#include "unity/core/model_loader.h"
#include "unity/core/model_zoo.h"
#include "unity/core/substitution.h"
#include "unity/core/substitution_search.h"

namespace unity {
namespace {

CandidateCost cost_on(const Graph& g, const CostModel& model) {
  const MappingCost costs(g, model);
  CandidateCost c;
  c.mapping = optimize_machine_mapping(costs);
  if (!c.mapping.feasible) {
    c.time = std::numeric_limits<double>::infinity();
    c.fits = false;
    c.overflow = std::numeric_limits<double>::infinity();
    return c;
  }
  c.time = c.mapping.cost.time();
  c.fits = c.mapping.fits_in_memory;
  const auto& machine = model.machine();
  for (std::size_t d = 0; d < c.mapping.memory_per_device.size(); ++d)
    c.overflow = std::max(c.overflow, c.mapping.memory_per_device[d] /
                                          static_cast<double>(machine.device(static_cast<int>(d)).memory_bytes));
  return c;
}

// Degrees the rules may use: every divisor of the device count above 1.
std::vector<std::int64_t> degrees_for(int devices) {
  std::vector<std::int64_t> out;
  for (int d = 2; d <= devices; ++d)
    if (devices % d == 0) out.push_back(d);
  return out;
}

RuleSet rules_for(const OptimizeOptions& options) {
  if (options.rule_files.empty()) return default_rules();
  RuleSet all;
  for (const auto& f : options.rule_files)
    for (auto& r : load_rule_file(f).rules) all.rules.push_back(std::move(r));
  return all;
}

std::vector<Graph> data_parallel_seed(const Graph& g, int devices) {
  if (devices <= 1) return {};
  try {
    return {make_data_parallel(g, devices)};
  } catch (const InputError&) {
    return {};  // the batch does not divide: the search finds its own way
  }
}

struct SearchPhase {
  Graph best;
  CandidateCost cost;
  std::vector<AppliedSubstitution> applied;
  std::int64_t candidates = 0;
  std::string status;
};

SearchPhase run_search(const Graph& start, const std::vector<Graph>& seeds, const RuleSet& rules,
                       const CostModel& model, const std::string& kind, int devices,
                       const OptimizeOptions& options) {
  SearchOptions so;
  so.alpha = options.alpha;
  so.budget = options.budget;
  so.degrees = degrees_for(devices);
  so.vetoed.insert(options.vetoes.begin(), options.vetoes.end());
  so.kind = kind;
  so.observer = options.observer;
  so.cancel = options.cancel;
  std::vector<AppliedSubstitution> pinned;
  Graph from = start;
  std::vector<Graph> pinned_seeds;
  for (const auto& name : options.pins) {
    const Rule* rule = rules.find(name);
    if (!rule->is_parallel() && kind == "parallel") continue;
    if (rule->is_parallel() && kind == "algebraic") continue;
    from = apply_everywhere(from, *rule, so.degrees, pinned);
  }
  for (const auto& s : seeds) {
    Graph g = s;
    std::vector<AppliedSubstitution> ignored;
    for (const auto& name : options.pins) g = apply_everywhere(g, *rules.find(name), so.degrees, ignored);
    pinned_seeds.push_back(std::move(g));
  }
  // A candidate where a pinned rule still matches may be searched through but never returned.
  std::vector<const Rule*> pinned_rules;
  for (const auto& name : options.pins) pinned_rules.push_back(rules.find(name));
  auto cost = [&](const Graph& g) {
    CandidateCost c = cost_on(g, model);
    for (const Rule* rule : pinned_rules)
      if (!find_matches(g, *rule).empty()) {
        c.fits = false;
        c.overflow = std::numeric_limits<double>::infinity();
      }
    return c;
  };
  const auto r = substitution_search(from, pinned_seeds, rules, cost, so);
  SearchPhase p{r.best, r.cost, pinned, r.candidates_evaluated, r.status};
  p.applied.insert(p.applied.end(), r.applied.begin(), r.applied.end());
  return p;
}

}  // namespace

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
  const CostModel costs(machine, optimizer_from_string(options.optimizer));
  Plan plan;
  plan.machine = machine;
  auto& s = plan.summary;
  CandidateCost best;
  if (options.mode == "data-parallel") {
    plan.pcg = make_data_parallel(model, devices);
    best = cost_on(plan.pcg, costs);
    s.candidates_evaluated = 1;
  } else if (options.mode == "joint" || options.mode == "sequential") {
    const RuleSet rules = rules_for(options);
    for (const auto& name : options.pins)
      if (!rules.find(name)) throw InputError(fmt::format("--pin {}: no rule has that name", name));
    for (const auto& name : options.vetoes)
      if (!rules.find(name)) throw InputError(fmt::format("--veto {}: no rule has that name", name));
    SearchPhase result;
    if (options.mode == "joint") {
      result = run_search(model, data_parallel_seed(model, devices), rules, costs, "", devices, options);
    } else {
      // TASO first: algebraic rules, costed on one device of the machine...
      const CostModel one(select_machine(machine, {0, 1}), costs.optimizer());
      const SearchPhase algebraic = run_search(model, {}, rules, one, "algebraic", 1, options);
      // ...then FlexFlow: parallel rules only, on the algebraically optimised graph.
      result = run_search(algebraic.best, data_parallel_seed(algebraic.best, devices), rules, costs,
                          "parallel", devices, options);
      result.applied.insert(result.applied.begin(), algebraic.applied.begin(), algebraic.applied.end());
      result.candidates += algebraic.candidates;
    }
    plan.pcg = std::move(result.best);
    best = std::move(result.cost);
    s.substitutions_applied = std::move(result.applied);
    s.candidates_evaluated = result.candidates;
    s.search_status = result.status;
    s.vetoed = options.vetoes;
  } else {
    throw InputError(fmt::format(
        "unknown mode '{}' (expected joint, sequential or data-parallel)", options.mode));
  }
  plan.mapping = std::move(best.mapping);
  if (!plan.mapping.feasible)
    throw InputError(fmt::format("no machine mapping of '{}' fits {} devices", model.name, devices));
  const auto elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started);

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
  s.mapping_subproblems = plan.mapping.subproblems;
  for (const auto& [id, n] : plan.pcg.nodes()) {
    if (is_compute_op(n.op.type)) ++s.operators;
    if (is_parallel_op(n.op.type)) ++s.parallel_operators;
  }
  return plan;
}

}  // namespace unity
