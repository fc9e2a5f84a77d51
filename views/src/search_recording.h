#pragma once
// A search of the explorer recorded into a project file, as `unity optimize --project` records one:
// the model and machine (stored once), the search row with every event (the project library's
// SearchRecorder: a writer thread with its own connection), and the plan linked to the search.
// Called on the search's worker thread; the GUI thread never waits for SQLite.
#include <QString>

#include "unity/core/plan.h"
#include "unity/core/plan_optimizer.h"

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
