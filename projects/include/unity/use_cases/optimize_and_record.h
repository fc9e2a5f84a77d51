#pragma once
// Optimize and record: the one way a plan is searched for with a project, for `unity optimize
// --project`, `unity compare --project` and the explorer's search. The project's pins, vetoes and
// measured operator profiles join the options; the model, the machine, the search with every step
// and the plan go into the project (docs/projects.md).
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "unity/core/plan/plan_optimizer.h"
#include "unity/projects/project.h"

namespace unity::use_cases {

// What an optimize recorded.
struct ProjectRecord {
  std::string file;
  std::int64_t model_id = 0;
  std::int64_t machine_id = 0;
  std::int64_t search_id = 0;  // 0: nothing recorded
  std::int64_t plan_id = 0;
  std::int64_t steps = 0;    // search_steps rows recorded
  std::size_t profiles = 0;  // the project's measured operator profiles the search could use
  nlohmann::json to_json() const;
  std::string describe() const;  // "p.unity: search 3 (1520 steps), plan 4"
};

// Every event to each observer, in order (the project's recorder, then the caller's: --progress,
// or the explorer's, which may hold the search while paused).
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

// Adds the project's pins and vetoes for `model_id` (its own and those for every model) to the
// options' own (where both name a place, the options' choice stays), and the project's measured
// op profiles. Returns the number of profiles.
std::size_t apply_project_choices(const projects::Project& project, std::int64_t model_id,
                                  OptimizeOptions& options);

// optimize_plan with the project's choices and profiles, recorded: the model, the machine, the
// search with every step (options.observer still sees every event), and the plan linked to the
// search. A search that fails after it started is recorded as failed; one refused before it
// started (a bad flag) leaves no search row. Exceptions propagate.
Plan optimize_and_record(projects::Project& project, const Graph& model,
                         const std::string& model_source, const MachineSpec& machine,
                         const OptimizeOptions& options, ProjectRecord& record);
// The same in the project at `file`, opened, or created when missing.
Plan optimize_and_record(const std::filesystem::path& file, const Graph& model,
                         const std::string& model_source, const MachineSpec& machine,
                         const OptimizeOptions& options, ProjectRecord& record);

}  // namespace unity::use_cases
