#include "search_recording.h"

#include <QFile>

#include <exception>
#include <optional>

#include "unity/projects/project.h"
#include "unity/use_cases/optimize_and_record.h"

namespace unity::views {

Plan optimizeRecorded(const Graph& model, const MachineSpec& machine, OptimizeOptions options,
                      const QString& projectFile, const QString& modelSource,
                      RecordingResult& recording) {
  std::optional<projects::Project> project;
  try {
    project.emplace(
        projects::Project::open_or_create(QFile::encodeName(projectFile).toStdString()));
  } catch (const std::exception& e) {
    // A project that cannot be opened does not stop the search: it runs unrecorded.
    recording.error = QString::fromUtf8(e.what());
    return optimize_plan(model, machine, options);
  }
  use_cases::ProjectRecord record;
  try {
    Plan plan = use_cases::optimize_and_record(*project, model, modelSource.toStdString(), machine,
                                               options, record);
    recording.searchId = record.search_id;
    return plan;
  } catch (...) {
    recording.searchId = record.search_id;
    throw;
  }
}

}  // namespace unity::views
