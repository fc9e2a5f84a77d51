#pragma once
// What the explorer has open: the model (built for the machine's device count), the machine, the
// plans found for them, and the selected operator. Every view reads it and follows its signals, so
// a selection made in one view shows in the others. Plans are keyed by mode ("data-parallel",
// "sequential", "joint", "expert") and dropped when the model or the machine changes.
#include <QObject>
#include <QString>
#include <QStringList>

#include <map>
#include <memory>

#include "unity/core/machine/machine_spec.h"
#include "unity/core/pcg/graph.h"
#include "unity/core/plan/plan.h"
#include "unity/executor/training.h"

namespace unity::views {

class ProjectSession;

class ExplorerDocument : public QObject {
  Q_OBJECT

 public:
  explicit ExplorerDocument(QObject* parent = nullptr);

  // The model as searched: zoo models carry the paper's per-device batch times the device count.
  std::shared_ptr<const Graph> model() const { return model_; }
  QString modelSpec() const { return modelSpec_; }
  void setModel(std::shared_ptr<const Graph> model, const QString& spec);

  std::shared_ptr<const MachineSpec> machine() const { return machine_; }
  QString machineSpec() const { return machineSpec_; }
  MachineSelection machineSelection() const { return selection_; }
  void setMachine(std::shared_ptr<const MachineSpec> machine, const QString& spec,
                  const MachineSelection& selection);
  // "summit · 2 nodes × 6 NVIDIA V100-SXM2-16GB (12 GPUs)"
  QString machineDescription() const;

  std::shared_ptr<const Plan> plan(const QString& mode) const;
  void setPlan(const QString& mode, std::shared_ptr<const Plan> plan);
  QStringList planModes() const;  // the modes with a plan, in kModes order
  // The plan views show by default: the one the user opened (a plan file), else the fastest one
  // found so far.
  QString bestMode() const;
  // The mode of a plan the user opened explicitly; views show it first even when a faster plan
  // (the data-parallel one computed beside it) arrives. Cleared with the plans.
  void setPreferredMode(const QString& mode);
  QString preferredMode() const { return preferred_; }
  static const QStringList& modes();              // data-parallel, sequential, joint, expert
  static QString modeTitle(const QString& mode);  // "Data parallel", "Joint (Unity)"

  // The most pipelined plan of the views: the fastest plan with a pipeline (else bestMode()).
  QString bestPipelinedMode() const;

  // What the last run of a pipelined plan measured (the run view puts it here; the timeline and
  // memory views show it beside the prediction). Dropped with the plans.
  void setMeasurement(std::shared_ptr<const Plan> plan,
                      std::shared_ptr<const executor::PipelineMeasurement> measurement);
  // The measurement of a run of `plan` (the same plan, or one with the same model, mode and
  // pipeline layout); null when there is none.
  std::shared_ptr<const executor::PipelineMeasurement> measurement(const Plan& plan) const;

  // The selected operator, by name: names are stable across the plans of one model, ids are not.
  QString selectedName() const { return selected_; }
  void setSelectedName(const QString& name);

  // The substitution table's pins and vetoes ("RULE" or "RULE@NODE"): every search of the
  // explorer honours them, the search view's and the compare view's alike.
  QStringList pins() const { return pins_; }
  QStringList vetoes() const { return vetoes_; }
  void setDecisions(const QStringList& pins, const QStringList& vetoes);

  // The project file the session records into (closed when none is open).
  ProjectSession* project() const { return project_; }

  // Bumped whenever the model or machine changes, so late results of old work can be recognised.
  quint64 generation() const { return generation_; }

 signals:
  void modelChanged();
  void machineChanged();
  void planChanged(const QString& mode);  // a plan was added, replaced or (empty mode) all dropped
  void selectionChanged(const QString& name);
  void measurementChanged();
  void decisionsChanged();

 private:
  void dropPlans();

  std::shared_ptr<const Graph> model_;
  QString modelSpec_;
  std::shared_ptr<const MachineSpec> machine_;
  QString machineSpec_;
  MachineSelection selection_;
  std::map<QString, std::shared_ptr<const Plan>> plans_;
  std::shared_ptr<const Plan> measuredPlan_;
  std::shared_ptr<const executor::PipelineMeasurement> measurement_;
  QString selected_;
  QString preferred_;
  QStringList pins_;
  QStringList vetoes_;
  ProjectSession* project_;
  quint64 generation_ = 0;
};

}  // namespace unity::views
