#include "unity/use_cases/optimize_and_record.h"

#include <exception>

#include <fmt/format.h>

#include "unity/core/errors.h"
#include "unity/projects/op_profiles.h"
#include "unity/projects/search_recorder.h"
#include "unity/use_cases/rule_choices.h"

namespace unity::use_cases {
namespace {

nlohmann::json search_config(const OptimizeOptions& o, const Graph& model,
                             const std::string& model_source, std::size_t profiles) {
  return {{"alpha", o.alpha},
          {"budget", o.budget},
          {"optimizer", o.optimizer},
          {"rules", o.rule_files},
          {"pins", o.pins},
          {"vetoes", o.vetoes},
          {"batch", model.batch_size},
          {"model_source", model_source},
          {"op_profiles", profiles}};
}

}  // namespace

nlohmann::json ProjectRecord::to_json() const {
  return {{"file", file},           {"model_id", model_id}, {"machine_id", machine_id},
          {"search_id", search_id}, {"plan_id", plan_id},   {"steps", steps},
          {"op_profiles", profiles}};
}

std::string ProjectRecord::describe() const {
  return fmt::format("{}: search {} ({} steps), plan {}", file, search_id, steps, plan_id);
}

std::size_t apply_project_choices(const projects::Project& project, std::int64_t model_id,
                                  OptimizeOptions& options) {
  merge_choices(stored_choices(project, model_id), options.pins, options.vetoes);
  auto profiles = projects::ProjectProfileSource::load(project);
  const std::size_t count = profiles->size();
  if (count > 0) options.profiles = std::move(profiles);
  return count;
}

Plan optimize_and_record(const std::filesystem::path& file, const Graph& model,
                         const std::string& model_source, const MachineSpec& machine,
                         const OptimizeOptions& options, ProjectRecord& record) {
  auto project = projects::Project::open_or_create(file);
  return optimize_and_record(project, model, model_source, machine, options, record);
}

Plan optimize_and_record(projects::Project& project, const Graph& model,
                         const std::string& model_source, const MachineSpec& machine,
                         const OptimizeOptions& options, ProjectRecord& record) {
  record.file = project.file().string();
  record.model_id = project.add_model(model, model_source);
  record.machine_id = project.add_machine(machine);
  OptimizeOptions recorded_options = options;
  record.profiles = apply_project_choices(project, record.model_id, recorded_options);

  projects::SearchInfo info;
  info.model_id = record.model_id;
  info.machine_id = record.machine_id;
  info.devices = machine.num_devices();
  info.mode = options.mode;
  info.config = search_config(recorded_options, model, model_source, record.profiles);
  projects::SearchRecorder recorder(project, info);
  record.search_id = recorder.search_id();
  // The recorder only queues an event; the caller's observer may hold the search (a paused GUI).
  ObserverFanout observers;
  observers.add(&recorder);
  observers.add(options.observer);
  recorded_options.observer = &observers;

  Plan plan;
  try {
    plan = optimize_plan(model, machine, recorded_options);
  } catch (const InputError& e) {
    // Refused before it searched (an unknown rule, a mode it cannot run): nothing to keep.
    if (recorder.reported_events() == 0) {
      recorder.discard();
      record.search_id = 0;
    } else {
      recorder.fail(e.what());
    }
    throw;
  } catch (const std::exception& e) {
    recorder.fail(fmt::format("internal error: {}", e.what()));
    throw;
  }
  projects::SearchOutcome outcome;
  outcome.search_seconds = plan.summary.search_seconds;
  outcome.best_ms = plan.summary.iteration_time_ms;
  outcome.candidates_evaluated = plan.summary.candidates_evaluated;
  recorder.finish(outcome);
  record.steps = project.count_search_steps(record.search_id);
  record.plan_id = project.add_plan(plan, record.search_id);
  return plan;
}

}  // namespace unity::use_cases
