#pragma once
// `--project FILE` for the planning and running commands: what each records into the project file
// (docs/projects.md), in one place so optimize, compare, run and calibrate record the same way.
//
//   optimize / compare:  optimize_into_project(file, model, source, machine, options, record)
//                        (once per plan; compare calls it for each mode it runs)
//   run:                 RunRecording rec(project, plan, backend, ranks, config);
//                        rec.add_iterations({{i, ms, loss}, ...});  // as iterations finish
//                        rec.finish("completed", run_json);         // or record_run(...) at the
//                        end
//   calibrate:           record_profiles(project, profiles)  (keys: projects::op_profile_key)
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "unity/core/plan_optimizer.h"
#include "unity/projects/project.h"
#include "unity/projects/records.h"

namespace unity::cli {

// Adds `--project FILE` (created when it does not exist).
CLI::Option* add_project_option(CLI::App* cmd, std::string& file);

// What an optimize recorded, for the command's output.
struct ProjectRecord {
  std::string file;
  std::int64_t model_id = 0;
  std::int64_t machine_id = 0;
  std::int64_t search_id = 0;
  std::int64_t plan_id = 0;
  std::int64_t steps = 0;  // search_steps rows recorded
  nlohmann::json to_json() const;
  std::string describe() const;  // "p.unity: search 3 (1520 steps), plan 4"
};

// Every event to each observer, in order (the CLI's --progress beside the project recorder).
class ObserverFanout : public SearchObserver {
 public:
  void add(SearchObserver* observer) {
    if (observer) observers_.push_back(observer);
  }
  void on_event(const SearchEvent& event) override {
    for (auto* o : observers_) o->on_event(event);
  }
  bool empty() const { return observers_.empty(); }

 private:
  std::vector<SearchObserver*> observers_;
};

// Adds the project's pins and vetoes for `model_id` (and those for every model) to the options'
// own (a rule the options already pin or veto at the same place keeps the options' choice), and
// the project's measured op profiles. Returns the number of profiles applied.
std::size_t apply_project_choices(const projects::Project& project, std::int64_t model_id,
                                  OptimizeOptions& options);

// optimize_plan, recorded in the project at `file` (opened, or created when missing): the model,
// the machine, the search with every step (options.observer still sees every event), and the plan
// linked to the search. A search that fails after it started is recorded as failed; one refused
// before it started (a bad flag) leaves no search row. Exceptions propagate.
Plan optimize_into_project(const std::string& file, const Graph& model,
                           const std::string& model_source, const MachineSpec& machine,
                           const OptimizeOptions& options, ProjectRecord& record);
Plan optimize_into_project(projects::Project& project, const Graph& model,
                           const std::string& model_source, const MachineSpec& machine,
                           const OptimizeOptions& options, ProjectRecord& record);

// A training run of a plan, recorded as it goes: the plan is stored (or the equal stored one is
// reused), the run row reads 'running' until finish(), metrics are committed per call. A run not
// finished when this object goes away is marked failed.
class RunRecording {
 public:
  RunRecording(projects::Project& project, const Plan& plan, const std::string& backend, int ranks,
               const nlohmann::json& config = nlohmann::json::object());
  ~RunRecording();
  RunRecording(const RunRecording&) = delete;
  RunRecording& operator=(const RunRecording&) = delete;

  std::int64_t run_id() const { return run_id_; }
  std::int64_t plan_id() const { return plan_id_; }
  void add_iterations(const std::vector<projects::RunMetric>& metrics);
  // status: completed, cancelled or failed; result: the command's --json object.
  void finish(std::string_view status, const nlohmann::json& result);

 private:
  projects::Project& project_;
  std::int64_t plan_id_ = 0;
  std::int64_t run_id_ = 0;
  bool finished_ = false;
};

// A run that is over, in one call. Returns the run id.
std::int64_t record_run(projects::Project& project, const Plan& plan, const std::string& backend,
                        int ranks, const nlohmann::json& config,
                        const std::vector<projects::RunMetric>& metrics, std::string_view status,
                        const nlohmann::json& result);

// Measured op times (`unity calibrate`, or a measured run), keyed by projects::op_profile_key and
// DeviceSpec::name; replaces earlier measurements of the same op on the same device.
void record_profiles(projects::Project& project, const std::vector<projects::OpProfile>& profiles);

}  // namespace unity::cli
