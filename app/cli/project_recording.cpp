#include "project_recording.h"

#include <algorithm>
#include <exception>
#include <memory>

#include <fmt/format.h>

#include "unity/core/errors.h"
#include "unity/projects/op_profiles.h"
#include "unity/projects/search_recorder.h"

namespace unity::cli {
namespace {

// The "RULE" / "RULE@NODE" text --pin and --veto take, for a stored choice; empty for a match
// this build does not know how to apply.
std::string location_text(const projects::PinVeto& choice) {
  if (choice.match.is_null()) return choice.rule;
  if (choice.match.is_object() && choice.match.size() == 1 && choice.match.contains("node") &&
      choice.match["node"].is_string())
    return choice.rule + "@" + choice.match["node"].get<std::string>();
  return {};
}

bool contains(const std::vector<std::string>& list, const std::string& value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

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

CLI::Option* add_project_option(CLI::App* cmd, std::string& file) {
  return cmd->add_option("--project", file,
                         "Record into this project file (.unity; created when missing)");
}

nlohmann::json ProjectRecord::to_json() const {
  return {{"file", file},           {"model_id", model_id}, {"machine_id", machine_id},
          {"search_id", search_id}, {"plan_id", plan_id},   {"steps", steps}};
}

std::string ProjectRecord::describe() const {
  return fmt::format("{}: search {} ({} steps), plan {}", file, search_id, steps, plan_id);
}

std::size_t apply_project_choices(const projects::Project& project, std::int64_t model_id,
                                  OptimizeOptions& options) {
  // The command line decides where it and the project disagree about the same place.
  const auto cli_pins = options.pins;
  const auto cli_vetoes = options.vetoes;
  for (const auto& choice : project.pins_vetoes(model_id)) {
    const std::string where = location_text(choice);
    if (where.empty() || contains(cli_pins, where) || contains(cli_vetoes, where)) continue;
    auto& list = choice.state == projects::RuleChoice::Pin ? options.pins : options.vetoes;
    if (!contains(list, where)) list.push_back(where);
  }
  auto profiles = projects::ProjectProfileSource::load(project);
  const std::size_t count = profiles->size();
  if (count > 0) options.profiles = std::move(profiles);
  return count;
}

Plan optimize_into_project(const std::string& file, const Graph& model,
                           const std::string& model_source, const MachineSpec& machine,
                           const OptimizeOptions& options, ProjectRecord& record) {
  auto project = projects::Project::open_or_create(file);
  return optimize_into_project(project, model, model_source, machine, options, record);
}

Plan optimize_into_project(projects::Project& project, const Graph& model,
                           const std::string& model_source, const MachineSpec& machine,
                           const OptimizeOptions& options, ProjectRecord& record) {
  record.file = project.file().string();
  record.model_id = project.add_model(model, model_source);
  record.machine_id = project.add_machine(machine);
  OptimizeOptions recorded_options = options;
  const std::size_t profiles = apply_project_choices(project, record.model_id, recorded_options);

  projects::SearchInfo info;
  info.model_id = record.model_id;
  info.machine_id = record.machine_id;
  info.devices = machine.num_devices();
  info.mode = options.mode;
  info.config = search_config(recorded_options, model, model_source, profiles);
  projects::SearchRecorder recorder(project, info);
  record.search_id = recorder.search_id();
  ObserverFanout observers;
  observers.add(options.observer);
  observers.add(&recorder);
  recorded_options.observer = &observers;

  Plan plan;
  try {
    plan = optimize_plan(model, machine, recorded_options);
  } catch (const InputError& e) {
    // Refused before it searched (an unknown rule, a mode it cannot run): nothing to keep.
    if (recorder.reported_events() == 0)
      recorder.discard();
    else
      recorder.fail(e.what());
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

RunRecording::RunRecording(projects::Project& project, const Plan& plan, const std::string& backend,
                           int ranks, const nlohmann::json& config)
    : project_(project) {
  const auto existing = project.find_plan(plan);
  plan_id_ = existing ? *existing : project.add_plan(plan);
  run_id_ = project.begin_run(plan_id_, backend, ranks, config);
}

RunRecording::~RunRecording() {
  if (finished_) return;
  try {
    project_.finish_run(run_id_, projects::kFailed,
                        {{"error", "the run ended before it reported its result"}});
  } catch (...) {
    // A destructor must not throw; the row reads as interrupted once this process is gone.
  }
}

void RunRecording::add_iterations(const std::vector<projects::RunMetric>& metrics) {
  project_.add_run_metrics(run_id_, metrics);
}

void RunRecording::finish(std::string_view status, const nlohmann::json& result) {
  project_.finish_run(run_id_, status, result);
  finished_ = true;
}

std::int64_t record_run(projects::Project& project, const Plan& plan, const std::string& backend,
                        int ranks, const nlohmann::json& config,
                        const std::vector<projects::RunMetric>& metrics, std::string_view status,
                        const nlohmann::json& result) {
  RunRecording run(project, plan, backend, ranks, config);
  if (!metrics.empty()) run.add_iterations(metrics);
  run.finish(status, result);
  return run.run_id();
}

void record_profiles(projects::Project& project, const std::vector<projects::OpProfile>& profiles) {
  project.put_op_profiles(profiles);
}

}  // namespace unity::cli
