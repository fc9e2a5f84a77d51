#pragma once
// A search of the explorer recorded into a project file by the use case `unity optimize --project`
// uses (use_cases::optimize_and_record): the project's pins, vetoes and measured operator times
// join the search, and the model, machine, search steps and plan are recorded. Called on the
// search's worker thread; the GUI thread never waits for SQLite.
#include <QString>

#include "unity/core/plan/plan.h"
#include "unity/core/plan/plan_optimizer.h"

namespace unity::views {

struct RecordingResult {
  qint64 searchId = 0;  // 0: nothing recorded
  QString error;        // why recording failed (the search itself went on)
};

// optimize_plan(model, machine, options) with the search recorded into `projectFile` under
// `modelSource`. Search errors propagate as from optimize_plan (and are recorded as failed);
// recording errors land in `recording`.
Plan optimizeRecorded(const Graph& model, const MachineSpec& machine, OptimizeOptions options,
                      const QString& projectFile, const QString& modelSource,
                      RecordingResult& recording);

}  // namespace unity::views
