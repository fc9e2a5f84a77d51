#include "unity/core/launch/launcher_verdicts.h"

#include <algorithm>

#include <fmt/format.h>

#include "unity/core/errors.h"
#include "unity/core/launch/launch_spec.h"
#include "unity/core/plan/plan_optimizer.h"

namespace unity::launch {

std::vector<std::string> model_refusals(const Graph& model, const MachineSpec& machine,
                                        Framework framework) {
  OptimizeOptions simplest;
  simplest.mode = "expert";
  simplest.layout.tensor_parallel = 1;
  simplest.layout.pipeline_stages = 1;
  simplest.layout.context_parallel = 1;
  simplest.layout.expert_parallel = 1;
  simplest.layout.zero_stage = 1;
  simplest.layout.recompute = Recompute::None;
  Plan plan;
  try {
    plan = optimize_plan(model, machine, simplest);
  } catch (const InputError&) {
    return {};  // no such layout for this model: the search decides
  }
  const auto verdicts = launcher_verdicts(plan);
  if (!verdicts || verdicts->searched_own_way) return {};
  return verdicts->of(framework).refusals;
}

std::optional<LauncherVerdicts> launcher_verdicts(const Plan& plan) {
  if (!plan_model_shape(plan)) return std::nullopt;
  const Derivation d = launch_spec_of(plan);
  LauncherVerdicts out;
  out.searched_own_way = !d.spec;
  for (Framework f : kFrameworks)
    out.verdicts.push_back({f, d.spec ? cannot_run(*d.spec, f) : d.inexpressible});
  return out;
}

const LauncherVerdict& LauncherVerdicts::of(Framework f) const {
  return *std::find_if(verdicts.begin(), verdicts.end(),
                       [&](const LauncherVerdict& v) { return v.framework == f; });
}

bool LauncherVerdicts::all_run() const {
  return std::all_of(verdicts.begin(), verdicts.end(),
                     [](const LauncherVerdict& v) { return v.runs(); });
}

std::string LauncherVerdicts::describe() const {
  std::vector<std::string> running;
  std::vector<const LauncherVerdict*> refusing;
  for (const auto& v : verdicts) {
    if (v.runs())
      running.emplace_back(display_name(v.framework));
    else
      refusing.push_back(&v);
  }
  if (running.empty() && !refusing.empty() &&
      std::all_of(refusing.begin(), refusing.end(), [&](const LauncherVerdict* v) {
        return v->refusals.front() == refusing.front()->refusals.front();
      }))
    return "no launcher runs it as it is: " + refusing.front()->refusals.front();
  std::string out;
  for (std::size_t i = 0; i < running.size(); ++i)
    out += (i == 0 ? "" : i + 1 == running.size() ? " and " : ", ") + running[i];
  out += running.empty()       ? "no launcher runs it as it is"
         : running.size() == 1 ? " runs it as it is"
                               : " run it as it is";
  for (const LauncherVerdict* v : refusing)
    out += fmt::format("; {} does not: {}", display_name(v->framework), v->refusals.front());
  return out;
}

}  // namespace unity::launch
