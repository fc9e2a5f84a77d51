// The search view's side of project files: the recorded searches it can replay, replaying one,
// and the substitution table's decisions read from and written to the project.
#include <QComboBox>
#include <QLabel>
#include <QPushButton>
#include <QtConcurrent/QtConcurrentRun>

#include <exception>

#include "search_chart.h"
#include "search_stats_panel.h"
#include "unity/views/display_format.h"
#include "unity/views/explorer_document.h"
#include "unity/views/graph_view.h"
#include "unity/views/project_session.h"
#include "unity/views/search_view.h"
#include "unity/views/substitution_model.h"

namespace unity::views {

void SearchView::refreshRecorded() {
  const qint64 previous = recorded_->currentData().toLongLong();
  recorded_->clear();
  ProjectSession* project = document_->project();
  const auto model = document_->model();
  const auto machine = document_->machine();
  if (project->isOpen() && model && machine) {
    for (const auto& r : project->searches()) {
      // Only what the open model and machine can show: the recorded node names must be its own.
      if (r.model != model->name || r.info.devices != machine->num_devices() || r.steps == 0)
        continue;
      recorded_->insertItem(0,
                            tr("#%1 %2 · %3 · %4")
                                .arg(r.id)
                                .arg(QString::fromStdString(r.info.mode),
                                     r.best_ms ? formatMs(*r.best_ms) : tr("no plan"),
                                     QString::fromStdString(r.status)),
                            qint64(r.id));
    }
  }
  const int index = recorded_->findData(previous);
  recorded_->setCurrentIndex(index >= 0 ? index : (recorded_->count() > 0 ? 0 : -1));
  const bool any = recorded_->count() > 0;
  for (QWidget* w : {static_cast<QWidget*>(recorded_), static_cast<QWidget*>(replaySpeed_),
                     static_cast<QWidget*>(replay_)})
    w->setVisible(project->isOpen());
  recorded_->setEnabled(any);
  replay_->setEnabled(any && !runner_->isActive() && !replayLoader_.isRunning());
  if (project->isOpen() && !any) recorded_->setPlaceholderText(tr("no recorded search"));
}

QList<qint64> SearchView::replayableSearches() const {
  QList<qint64> out;
  for (int i = 0; i < recorded_->count(); ++i) out << recorded_->itemData(i).toLongLong();
  return out;
}

bool SearchView::replaySearch(qint64 searchId, double speed) {
  ProjectSession* project = document_->project();
  if (!project->isOpen() || runner_->isActive() || replayLoader_.isRunning() ||
      !replayableSearches().contains(searchId))
    return false;
  QString mode;
  for (const auto& r : project->searches())
    if (r.id == searchId) mode = QString::fromStdString(r.info.mode);
  const QString file = project->file();
  const quint64 generation = document_->generation();
  status_->setText(tr("Loading search %1 from the project…").arg(searchId));
  replay_->setEnabled(false);
  replayLoader_.setFuture(QtConcurrent::run([file, searchId, speed, mode, generation] {
    ReplayData d;
    d.id = searchId;
    d.generation = generation;
    d.speed = speed;
    d.mode = mode;
    try {
      d.events = ProjectSession::readSearchSteps(file, searchId);
      d.plan = ProjectSession::readSearchPlan(file, searchId);
    } catch (const std::exception& e) {
      d.error = QString::fromUtf8(e.what());
    }
    return d;
  }));
  emit busyChanged(true);
  return true;
}

void SearchView::onReplayLoaded() {
  ReplayData d = replayLoader_.result();
  emit busyChanged(busy());
  if (d.generation != document_->generation()) return;  // the model changed meanwhile
  if (!d.error.isEmpty() || d.events.empty()) {
    status_->setText(
        tr("<span style='color:#d32f2f'>Cannot replay search %1: %2</span>")
            .arg(d.id)
            .arg(d.error.isEmpty() ? tr("it recorded no step") : d.error.toHtmlEscaped()));
    onStateChanged(runner_->state());
    return;
  }
  setMode(d.mode);
  runGeneration_ = document_->generation();
  graph_->clearHighlights();
  lastHighlighted_ = -1;
  substitutions_->clearStatistics();
  if (!runner_->startReplay(std::move(d.events), d.plan, d.mode, d.speed)) return;
  chart_->reset(0);
  stats_->clear();
  lastActivityUpdate_.start();
  status_->setText(tr("Replaying search %1 from the project…").arg(d.id));
}

void SearchView::setDecisions(const QStringList& pins, const QStringList& vetoes) {
  applyingDecisions_ = true;
  substitutions_->resetDecisions();
  const auto apply = [this](const QString& where, SubstitutionModel::Decision decision) {
    const RuleLocation location = parse_rule_location(where.toStdString());
    const QString rule = QString::fromStdString(location.rule);
    const QString node = QString::fromStdString(location.node);
    int row = substitutions_->rowOf(rule, node);
    if (row < 0 && !node.isEmpty()) row = substitutions_->addLocation(rule, node);
    if (row >= 0) substitutions_->setDecision(row, decision);
  };
  for (const QString& p : pins) apply(p, SubstitutionModel::Decision::Pin);
  for (const QString& v : vetoes) apply(v, SubstitutionModel::Decision::Veto);
  applyingDecisions_ = false;
  document_->setDecisions(substitutions_->pins(), substitutions_->vetoes());
  if (matches_.generation == document_->generation()) applyMatchCounts();
}

void SearchView::storeDecisions() {
  if (applyingDecisions_) return;
  document_->setDecisions(substitutions_->pins(), substitutions_->vetoes());
  ProjectSession* project = document_->project();
  const auto model = document_->model();
  if (!project->isOpen() || !model) return;
  QString error;
  if (!project->storeDecisions(*model, document_->modelSpec(), substitutions_->pins(),
                               substitutions_->vetoes(), &error))
    status_->setText(tr("<span style='color:#d32f2f'>Decisions not saved in the project: %1</span>")
                         .arg(error.toHtmlEscaped()));
}

}  // namespace unity::views
