#include "search_recording.h"

#include <QFile>

#include <exception>
#include <memory>
#include <optional>

#include "unity/core/errors.h"
#include "unity/projects/project.h"
#include "unity/projects/search_recorder.h"

namespace unity::views {

namespace {

// Every event to the recorder (which only queues it) and then to the GUI's observer (which may
// hold the search while paused).
class Fanout : public SearchObserver {
 public:
  Fanout(SearchObserver* recorder, SearchObserver* gui) : recorder_(recorder), gui_(gui) {}
  void on_event(const SearchEvent& e) override {
    if (recorder_) recorder_->on_event(e);
    if (gui_) gui_->on_event(e);
  }

 private:
  SearchObserver* recorder_;
  SearchObserver* gui_;
};

}  // namespace

Plan optimizeRecorded(const Graph& model, const MachineSpec& machine, OptimizeOptions options,
                      const QString& projectFile, const QString& modelSource,
                      RecordingResult& recording) {
  std::optional<projects::Project> project;
  std::unique_ptr<projects::SearchRecorder> recorder;
  try {
    project.emplace(
        projects::Project::open_or_create(QFile::encodeName(projectFile).toStdString()));
    projects::SearchInfo info;
    info.model_id = project->add_model(model, modelSource.toStdString());
    info.machine_id = project->add_machine(machine);
    info.devices = machine.num_devices();
    info.mode = options.mode;
    info.config = {{"alpha", options.alpha},         {"budget", options.budget},
                   {"optimizer", options.optimizer}, {"rules", options.rule_files},
                   {"pins", options.pins},           {"vetoes", options.vetoes},
                   {"batch", model.batch_size},      {"model_source", modelSource.toStdString()},
                   {"source", "unity-explorer"}};
    recorder = std::make_unique<projects::SearchRecorder>(*project, info);
    recording.searchId = recorder->search_id();
  } catch (const std::exception& e) {
    recording.error = QString::fromUtf8(e.what());
    recorder.reset();
    project.reset();
    return optimize_plan(model, machine, options);
  }
  Fanout fanout(recorder.get(), options.observer);
  options.observer = &fanout;
  Plan plan;
  try {
    plan = optimize_plan(model, machine, options);
  } catch (const std::exception& e) {
    try {
      if (recorder->reported_events() == 0) {
        recorder->discard();
        recording.searchId = 0;
      } else {
        recorder->fail(e.what());
      }
    } catch (const std::exception&) {
      // The search's own error is the one to report.
    }
    throw;
  }
  try {
    projects::SearchOutcome outcome;
    outcome.search_seconds = plan.summary.search_seconds;
    outcome.best_ms = plan.summary.iteration_time_ms;
    outcome.candidates_evaluated = plan.summary.candidates_evaluated;
    recorder->finish(outcome);
    project->add_plan(plan, recording.searchId);
  } catch (const std::exception& e) {
    recording.error = QString::fromUtf8(e.what());
  }
  return plan;
}

}  // namespace unity::views
