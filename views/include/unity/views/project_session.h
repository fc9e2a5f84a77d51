#pragma once
// The project file (`.unity`, libunity_projects) the explorer has open, if any. While one is open
// the explorer records into it what the user does: searches of the search view with every event,
// the plans they find, training runs of the run view with every iteration, and the substitution
// table's pins and vetoes. Workers record on their own connections (SearchRunner, RunRunner); this
// object holds the GUI thread's connection for the small reads and writes the views make, and says
// when the file changed.
#include <QObject>
#include <QString>
#include <QStringList>

#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "unity/core/machine/machine_spec.h"
#include "unity/core/pcg/graph.h"
#include "unity/core/plan/plan.h"
#include "unity/projects/records.h"

namespace unity::projects {
class Project;
}

namespace unity::views {

// What opening a project shows: the model and machine of its latest search (else its latest
// plan, else its first model and machine), the latest plan of each mode for them, and the model's
// pins and vetoes. Read on any thread (ProjectSession::readContents).
struct ProjectContents {
  QString file;
  std::shared_ptr<const Graph> model;  // null: the project holds no model yet
  QString modelSource;                 // the zoo name or path it was recorded under
  std::shared_ptr<const MachineSpec> machine;
  std::map<QString, std::shared_ptr<const Plan>> plans;  // by mode
  QStringList pins, vetoes;                              // "RULE" / "RULE@NODE"
  QString error;                                         // not readable: why
};

class ProjectSession : public QObject {
  Q_OBJECT

 public:
  explicit ProjectSession(QObject* parent = nullptr);
  ~ProjectSession() override;

  // Opens (migrating an older version) or creates a project; false with *error when it cannot.
  bool open(const QString& file, QString* error);
  bool create(const QString& file, QString* error);
  void close();
  bool isOpen() const { return project_ != nullptr; }
  QString file() const { return file_; }
  projects::Project* project() const { return project_.get(); }

  // Any thread, with its own read-only connection.
  static ProjectContents readContents(const QString& file);
  static std::vector<SearchEvent> readSearchSteps(const QString& file, qint64 searchId);
  // The plan the search found (null when it has none, e.g. it failed).
  static std::shared_ptr<const Plan> readSearchPlan(const QString& file, qint64 searchId);

  // GUI thread, on this session's connection; empty when no project is open or it cannot be read.
  std::vector<projects::SearchRecord> searches() const;
  std::vector<projects::RunRecord> runs() const;
  std::vector<projects::PlanRecord> plans() const;
  std::vector<projects::RunMetric> runMetrics(qint64 runId) const;

  // Writes the session's state into the open project: the model, the machine, the plans (those
  // not stored yet) and the decisions. False with *error when it fails (nothing half-written: each
  // piece is one transaction, and a failure stops before the next).
  bool store(const Graph& model, const QString& modelSource, const MachineSpec& machine,
             const std::vector<std::shared_ptr<const Plan>>& plans, const QStringList& pins,
             const QStringList& vetoes, QString* error);
  // Replaces the model's stored pins and vetoes with these.
  bool storeDecisions(const Graph& model, const QString& modelSource, const QStringList& pins,
                      const QStringList& vetoes, QString* error);

  // Workers tell the session when they wrote something (a search or a run was recorded).
  void notifyChanged() { emit changed(); }

 signals:
  void opened(const QString& file);
  void closed();
  void changed();  // searches, plans or runs were recorded

 private:
  std::unique_ptr<projects::Project> project_;
  QString file_;
};

}  // namespace unity::views
