#include "unity/views/search_view.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMenu>
#include <QPushButton>
#include <QShortcut>
#include <QSortFilterProxyModel>
#include <QSpinBox>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include <set>

#include "category_colors.h"
#include "decision_delegate.h"
#include "legend.h"
#include "search_chart.h"
#include "search_stats_panel.h"
#include "table_style.h"
#include "unity/core/errors.h"
#include "unity/core/rules/substitution.h"
#include "unity/views/display_format.h"
#include "unity/views/explorer_document.h"
#include "unity/views/graph_view.h"
#include "unity/views/layout_request_panel.h"
#include "unity/views/project_session.h"
#include "unity/views/substitution_model.h"

namespace unity::views {

namespace {

// Hides the rules that cannot apply to the open model (no match, no decision, no activity), unless
// the user asks for all: the built-in set has over a hundred rules.
class RelevantRules : public QSortFilterProxyModel {
 public:
  using QSortFilterProxyModel::QSortFilterProxyModel;
  void setShowAll(bool all) {
    showAll_ = all;
    invalidateFilter();
  }

 protected:
  bool filterAcceptsRow(int row, const QModelIndex& parent) const override {
    if (showAll_) return true;
    const QAbstractItemModel* m = sourceModel();
    const auto value = [&](int column) { return m->index(row, column, parent).data(); };
    const QVariant matches = value(SubstitutionModel::MatchesColumn);
    if (matches.typeId() == QMetaType::QString) return true;  // not counted yet
    return matches.toInt() > 0 ||
           m->index(row, 0, parent).data(SubstitutionModel::DecisionRole).toInt() != 0 ||
           value(SubstitutionModel::CostedColumn).toInt() > 0 ||
           value(SubstitutionModel::AppliedColumn).toInt() > 0;
  }

 private:
  bool showAll_ = false;
};

constexpr int kCandidateGlowMs = 700;
constexpr int kBestGlowMs = 1500;
constexpr int kTableRefreshMs = 300;
}  // namespace

SearchView::SearchView(ExplorerDocument* document, QWidget* parent, LayoutService* service)
    : QWidget(parent),
      document_(document),
      runner_(new SearchRunner(this)),
      substitutions_(new SubstitutionModel(this)),
      graph_(new GraphView(this, service)),
      chart_(new SearchChart(this)),
      table_(new QTableView(this)),
      mode_(new QComboBox(this)),
      alpha_(new QDoubleSpinBox(this)),
      budget_(new QSpinBox(this)),
      layoutRequest_(new LayoutRequestPanel(this)),
      search_(new QPushButton(tr("Search"), this)),
      pause_(new QPushButton(tr("Pause"), this)),
      step_(new QPushButton(tr("Step"), this)),
      resume_(new QPushButton(tr("Resume"), this)),
      cancel_(new QPushButton(tr("Cancel"), this)),
      status_(new QLabel(this)),
      recorded_(new QComboBox(this)),
      replaySpeed_(new QComboBox(this)),
      replay_(new QPushButton(tr("Replay"), this)),
      stats_(new SearchStatsPanel(this)) {
  setObjectName(QStringLiteral("searchView"));
  mode_->addItem(tr("Joint (Unity)"), QStringLiteral("joint"));
  mode_->addItem(tr("Sequential (algebraic, then parallel)"), QStringLiteral("sequential"));
  alpha_->setRange(1.0, 3.0);
  alpha_->setSingleStep(0.01);
  alpha_->setDecimals(2);
  alpha_->setValue(1.05);
  alpha_->setToolTip(tr("Keep exploring candidates up to alpha × the best cost (paper 5.1)"));
  budget_->setRange(1, 1000000);
  budget_->setValue(200);
  budget_->setToolTip(tr("Candidates costed per substitution search"));
  search_->setObjectName(QStringLiteral("search"));
  pause_->setObjectName(QStringLiteral("pause"));
  step_->setObjectName(QStringLiteral("step"));
  resume_->setObjectName(QStringLiteral("resume"));
  cancel_->setObjectName(QStringLiteral("cancel"));
  search_->setToolTip(tr("Search with the pins and vetoes of the table (Ctrl+R)"));
  // Long status lines must not widen the window; the full text is in the tooltip.
  status_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  status_->setObjectName(QStringLiteral("searchStatus"));
  step_->setToolTip(tr("Let the paused search cost one more candidate"));
  cancel_->setToolTip(tr("Stop and keep the best plan found so far"));

  auto* controls = new QHBoxLayout;
  controls->setContentsMargins(6, 4, 6, 0);
  controls->addWidget(new QLabel(tr("Mode:"), this));
  controls->addWidget(mode_);
  controls->addWidget(new QLabel(tr("α"), this));
  controls->addWidget(alpha_);
  controls->addWidget(new QLabel(tr("Budget:"), this));
  controls->addWidget(budget_);
  controls->addSpacing(12);
  for (QPushButton* b : {search_, pause_, step_, resume_, cancel_}) controls->addWidget(b);
  recorded_->setObjectName(QStringLiteral("recordedSearches"));
  recorded_->setToolTip(tr("Searches of this model and machine recorded in the open project"));
  recorded_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  recorded_->setMinimumContentsLength(18);
  replay_->setObjectName(QStringLiteral("replay"));
  replay_->setToolTip(tr("Replay the recorded search: its candidates, chart and plan, as it ran"));
  for (const double speed : {1.0, 4.0, 16.0, 0.0})
    replaySpeed_->addItem(speed > 0 ? tr("×%1").arg(speed) : tr("at once"), speed);
  replaySpeed_->setToolTip(tr("Replay speed against the recorded pace"));
  controls->addWidget(status_, 1);

  auto* proxy = new RelevantRules(this);
  proxy->setSourceModel(substitutions_);
  proxy->setDynamicSortFilter(
      false);  // re-filtered when a search ends, not on every counter change
  proxy->setSortRole(SubstitutionModel::SortRole);
  table_->setModel(proxy);
  applyReadOnlyTableStyle(table_);
  // Rule order (match rows after their rule) until the user sorts or a search ends.
  table_->horizontalHeader()->setSortIndicator(-1, Qt::AscendingOrder);
  table_->setSortingEnabled(true);
  table_->setEditTriggers(QAbstractItemView::DoubleClicked | QAbstractItemView::SelectedClicked |
                          QAbstractItemView::EditKeyPressed);
  table_->setItemDelegateForColumn(SubstitutionModel::DecisionColumn, new DecisionDelegate(table_));
  // Columns are sized once per model change, not on every counter update (ResizeToContents would
  // measure every row each time the counters change, several times a second during a search).
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->horizontalHeader()->setResizeContentsPrecision(200);
  table_->setContextMenuPolicy(Qt::CustomContextMenu);
  table_->setObjectName(QStringLiteral("substitutionTable"));
  connect(table_, &QWidget::customContextMenuRequested, this, &SearchView::showTableMenu);
  const std::pair<Qt::Key, SubstitutionModel::Decision> keys[] = {
      {Qt::Key_P, SubstitutionModel::Decision::Pin},
      {Qt::Key_N, SubstitutionModel::Decision::Neutral},
      {Qt::Key_V, SubstitutionModel::Decision::Veto}};
  for (const auto& [key, decision] : keys) {
    // Keyboard decisions on the current row.
    auto* shortcut = new QShortcut(QKeySequence(key), table_, nullptr, nullptr, Qt::WidgetShortcut);
    connect(shortcut, &QShortcut::activated, this, [this, proxy, d = decision] {
      const QModelIndex current = table_->currentIndex();
      if (current.isValid()) substitutions_->setDecision(proxy->mapToSource(current).row(), d);
    });
  }

  auto* right = new QWidget(this);
  auto* rightLayout = new QVBoxLayout(right);
  rightLayout->setContentsMargins(4, 0, 4, 0);
  // Searches recorded in the open project (hidden without one), replayed into the same chart.
  auto* replayBar = new QHBoxLayout;
  replayBar->setContentsMargins(0, 2, 0, 0);
  replayBar->addWidget(recorded_, 1);
  replayBar->addWidget(replaySpeed_);
  replayBar->addWidget(replay_);
  rightLayout->addLayout(replayBar);
  rightLayout->addWidget(chart_, 1);
  rightLayout->addWidget(stats_);

  auto* graphPane = new QWidget(this);
  auto* graphLayout = new QVBoxLayout(graphPane);
  graphLayout->setContentsMargins(0, 0, 0, 0);
  graphLayout->setSpacing(0);
  graphLayout->addWidget(graph_, 1);
  auto* legend = makeLegend(graphPane);
  legend->setText(legend->text() + tr("&nbsp;&nbsp; <span style='color:%1'><b>glow</b></span>: "
                                      "rewritten by the current candidate")
                                       .arg(substitutedColor().name()));
  graphLayout->addWidget(legend);

  auto* upper = new QSplitter(Qt::Horizontal, this);
  upper->addWidget(graphPane);
  upper->addWidget(right);
  upper->setSizes({700, 520});
  auto* tablePane = new QWidget(this);
  auto* tableLayout = new QVBoxLayout(tablePane);
  tableLayout->setContentsMargins(0, 0, 0, 0);
  tableLayout->setSpacing(2);
  auto* tableBar = new QHBoxLayout;
  tableBar->setContentsMargins(6, 0, 6, 0);
  auto* tableTitle = new QLabel(
      tr("<b>Substitutions</b> &nbsp;pin: apply wherever it matches · veto: never apply · "
         "right-click to decide for one match"),
      this);
  tableBar->addWidget(tableTitle, 1);
  showAllRules_ = new QCheckBox(tr("Show rules that do not match the model"), this);
  connect(showAllRules_, &QCheckBox::toggled, this, [proxy](bool all) { proxy->setShowAll(all); });
  tableBar->addWidget(showAllRules_);
  tableLayout->addLayout(tableBar);
  tableLayout->addWidget(table_, 1);
  auto* vertical = new QSplitter(Qt::Vertical, this);
  vertical->addWidget(upper);
  vertical->addWidget(tablePane);
  vertical->setSizes({520, 230});

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addLayout(controls);
  layout->addWidget(layoutRequest_);
  layout->addWidget(vertical, 1);

  substitutions_->setRules(default_rules());
  table_->resizeColumnsToContents();
  connect(search_, &QPushButton::clicked, this, [this] { startSearch(); });
  connect(replay_, &QPushButton::clicked, this, [this] {
    if (recorded_->currentIndex() >= 0)
      replaySearch(recorded_->currentData().toLongLong(), replaySpeed_->currentData().toDouble());
  });
  connect(&replayLoader_, &QFutureWatcher<ReplayData>::finished, this, &SearchView::onReplayLoaded);
  connect(runner_, &SearchRunner::recorded, document_->project(), &ProjectSession::notifyChanged);
  connect(document_->project(), &ProjectSession::opened, this, &SearchView::refreshRecorded);
  connect(document_->project(), &ProjectSession::closed, this, &SearchView::refreshRecorded);
  connect(document_->project(), &ProjectSession::changed, this, &SearchView::refreshRecorded);
  connect(substitutions_, &SubstitutionModel::decisionsChanged, this, &SearchView::storeDecisions);
  connect(pause_, &QPushButton::clicked, runner_, &SearchRunner::pause);
  connect(step_, &QPushButton::clicked, runner_, &SearchRunner::step);
  connect(resume_, &QPushButton::clicked, runner_, &SearchRunner::resume);
  connect(cancel_, &QPushButton::clicked, runner_, &SearchRunner::cancel);
  connect(runner_, &SearchRunner::progress, this, &SearchView::onProgress);
  connect(runner_, &SearchRunner::candidatesCosted, this, &SearchView::onCandidates);
  connect(runner_, &SearchRunner::finished, this, &SearchView::onFinished);
  connect(runner_, &SearchRunner::failed, this, [this](const QString& message) {
    status_->setText(
        tr("<span style='color:#d32f2f'>Search failed: %1</span>").arg(message.toHtmlEscaped()));
  });
  connect(runner_, &SearchRunner::stateChanged, this, &SearchView::onStateChanged);
  connect(runner_, &SearchRunner::pausedAt, this, [this](const SearchSnapshot& s) {
    graph_->clearHighlights();
    graph_->highlightNodes(baseNodes(s), substitutedColor(), 0);
  });
  connect(document_, &ExplorerDocument::modelChanged, this, &SearchView::onModelChanged);
  connect(document_, &ExplorerDocument::machineChanged, this, [this] {
    if (runner_->isActive()) runner_->cancel();
  });
  connect(&matchWatcher_, &QFutureWatcher<MatchCounts>::finished, this, [this] {
    matches_ = matchWatcher_.result();
    if (matches_.generation == document_->generation()) applyMatchCounts();
  });
  connect(substitutions_, &QAbstractItemModel::rowsInserted, this, &SearchView::applyMatchCounts);
  connect(graph_, &GraphView::busyChanged, this, [this] { emit busyChanged(busy()); });
  onStateChanged(SearchRunner::State::Idle);
  onModelChanged();
}

QPushButton* SearchView::button(const QString& name) const {
  for (QPushButton* b : {search_, pause_, step_, resume_, cancel_})
    if (b->objectName() == name) return b;
  return nullptr;
}

QString SearchView::statusText() const { return status_->text(); }
QString SearchView::statsText() const { return stats_->text(); }

bool SearchView::busy() const {
  return runner_->isActive() || replayLoader_.isRunning() || graph_->layoutPending();
}

void SearchView::setMode(const QString& mode) {
  const int i = mode_->findData(mode);
  if (i >= 0) mode_->setCurrentIndex(i);
}

void SearchView::setBudget(int budget) { budget_->setValue(budget); }
void SearchView::setAlpha(double alpha) { alpha_->setValue(alpha); }

void SearchView::onModelChanged() {
  if (runner_->isActive()) runner_->cancel();
  graph_->setGraph(document_->model());
  chart_->reset(0);
  substitutions_->clearStatistics();
  stats_->clear();
  status_->setText(document_->model() ? tr("Ready: press Search to optimise %1 on %2.")
                                            .arg(QString::fromStdString(document_->model()->name),
                                                 document_->machineDescription())
                                      : tr("Open a model to search."));
  countMatches();
  refreshRecorded();
}

void SearchView::countMatches() {
  const auto model = document_->model();
  matchesReady_ = !model;
  if (!model) return;
  const quint64 generation = document_->generation();
  const RuleSet rules = substitutions_->rules();
  matchWatcher_.setFuture(QtConcurrent::run([model, rules, generation] {
    MatchCounts counts;
    counts.generation = generation;
    for (const Rule& rule : rules.rules) {
      const QString name = QString::fromStdString(rule.name);
      const std::vector<Match> matches = find_matches(*model, rule);
      counts.byLocation.insert(name, int(matches.size()));
      QStringList& nodes = counts.nodesByRule[name];
      for (const Match& m : matches) {
        for (NodeId id : m.matched_nodes()) {
          const QString node = QString::fromStdString(model->node(id).op.name);
          if (!nodes.contains(node)) nodes << node;
        }
      }
    }
    return counts;
  }));
}

void SearchView::applyMatchCounts() {
  if (matches_.generation != document_->generation()) return;
  QHash<QString, int> byLocation = matches_.byLocation;
  for (int row = 0; row < substitutions_->rowCount(); ++row) {
    const QString node = substitutions_->nodeAt(row);
    if (node.isEmpty()) continue;
    const QString rule = substitutions_->ruleAt(row);
    byLocation.insert(
        QString::fromStdString(to_string(RuleLocation{rule.toStdString(), node.toStdString()})),
        matches_.nodesByRule.value(rule).contains(node) ? 1 : 0);
  }
  substitutions_->setMatchCounts(byLocation);
  static_cast<RelevantRules*>(table_->model())->invalidate();
  table_->resizeColumnsToContents();
  matchesReady_ = true;
}

bool SearchView::startSearch(bool paused) {
  const auto model = document_->model();
  const auto machine = document_->machine();
  if (!model || !machine) {
    status_->setText(tr("Open a model and pick a machine first."));
    return false;
  }
  OptimizeOptions options;
  options.mode = mode_->currentData().toString().toStdString();
  options.alpha = alpha_->value();
  options.budget = budget_->value();
  // Large models: the pinned pipeline layout (empty: searched), or no pipelines at all.
  options.layout = layoutRequest_->request();
  options.pipelines = layoutRequest_->pipelinesAllowed();
  for (const QString& p : substitutions_->pins()) options.pins.push_back(p.toStdString());
  for (const QString& v : substitutions_->vetoes()) options.vetoes.push_back(v.toStdString());
  runGeneration_ = document_->generation();
  graph_->clearHighlights();
  lastHighlighted_ = -1;
  substitutions_->clearStatistics();
  ProjectSession* project = document_->project();
  runner_->setRecording(project->isOpen() ? project->file() : QString(), document_->modelSpec());
  if (!runner_->start(model, machine, options, paused)) return false;
  chart_->reset(0);
  stats_->clear();
  lastActivityUpdate_.start();
  return true;
}

QList<NodeId> SearchView::baseNodes(const SearchSnapshot& s) const {
  // Candidates keep the ids of the nodes a rewrite did not touch, and always their names.
  QList<NodeId> out;
  const Graph* g = graph_->graph();
  if (!g) return out;
  for (NodeId id : s.matched)
    if (g->contains(id)) out.append(id);
  for (const QString& name : s.matchedNames) {
    const NodeId id = graph_->nodeByName(name);
    if (id >= 0 && !out.contains(id)) out.append(id);
  }
  return out;
}

void SearchView::onProgress(const SearchSnapshot& s) {
  if (chart_->bestPointCount() == 0 && s.startMs > 0) chart_->reset(s.startMs);
  stats_->setSnapshot(s);
  if (s.candidates != lastHighlighted_ && !s.rule.isEmpty()) {
    lastHighlighted_ = s.candidates;
    graph_->highlightNodes(baseNodes(s), substitutedColor(), kCandidateGlowMs);
  }
  // The table's counters: a few times a second is plenty, and cheaper than 30 repaints.
  if (!lastActivityUpdate_.isValid() || lastActivityUpdate_.elapsed() >= kTableRefreshMs ||
      !runner_->isActive()) {
    substitutions_->setActivity(runner_->ruleActivity());
    lastActivityUpdate_.start();
  }
}

void SearchView::onCandidates(const QList<CandidatePoint>& points) {
  chart_->addCandidates(points);
}

void SearchView::onFinished(std::shared_ptr<const Plan> plan, const QString& status) {
  const SearchSnapshot& s = runner_->snapshot();
  chart_->finish(s.elapsed, plan->summary.iteration_time_ms);
  substitutions_->setActivity(runner_->ruleActivity());
  substitutions_->setApplied(plan.get());
  onProgress(s);
  QStringList applied;
  for (const auto& a : plan->summary.substitutions_applied)
    applied << QString::fromStdString(a.rule) + (a.pinned ? tr(" (pinned)") : QString());
  // What the search used first: rules in the plan, then the ones it tried most.
  auto* rules = static_cast<RelevantRules*>(table_->model());
  rules->invalidate();
  rules->sort(SubstitutionModel::CostedColumn, Qt::DescendingOrder);
  table_->sortByColumn(SubstitutionModel::AppliedColumn,
                       Qt::DescendingOrder);  // stable: ties by Costed
  table_->resizeColumnsToContents();
  status_->setText(tr("Search %1: %2 per iteration, %3 candidates in %4 s%5")
                       .arg(status, formatMs(plan->summary.iteration_time_ms))
                       .arg(plan->summary.candidates_evaluated)
                       .arg(plan->summary.search_seconds, 0, 'f', 1)
                       .arg(applied.isEmpty()
                                ? QString()
                                : tr(" · applied: %1").arg(applied.join(QStringLiteral(", ")))));
  // Glow where the final plan's rewrites applied.
  std::set<std::string> names;
  for (const auto& a : plan->summary.substitutions_applied)
    names.insert(a.nodes.begin(), a.nodes.end());
  QList<NodeId> where;
  for (const std::string& n : names) {
    const NodeId id = graph_->nodeByName(QString::fromStdString(n));
    if (id >= 0) where.append(id);
  }
  graph_->clearHighlights();
  graph_->highlightNodes(where, newBestColor(), kBestGlowMs);
  if (runGeneration_ == document_->generation()) {
    document_->setPlan(runner_->mode(), plan);
    emit searchFinished(runner_->mode());
  }
}

void SearchView::onStateChanged(SearchRunner::State state) {
  const bool active = runner_->isActive();
  search_->setEnabled(!active);
  search_->setText(runner_->state() == SearchRunner::State::Idle ? tr("Search") : tr("Re-run"));
  pause_->setEnabled(state == SearchRunner::State::Running);
  step_->setEnabled(state == SearchRunner::State::Paused);
  resume_->setEnabled(state == SearchRunner::State::Paused);
  cancel_->setEnabled(state == SearchRunner::State::Running ||
                      state == SearchRunner::State::Paused);
  mode_->setEnabled(!active);
  replay_->setEnabled(!active && !replayLoader_.isRunning() && recorded_->count() > 0);
  alpha_->setEnabled(!active);
  budget_->setEnabled(!active);
  layoutRequest_->setEnabled(!active);
  if (state == SearchRunner::State::Running) status_->setText(tr("Searching…"));
  if (state == SearchRunner::State::Paused)
    status_->setText(tr("Paused: Step costs the next candidate, Resume continues."));
  if (state == SearchRunner::State::Cancelling)
    status_->setText(tr("Cancelling: the search stops after the candidate it is expanding."));
  emit busyChanged(busy());
}

void SearchView::showTableMenu(const QPoint& pos) {
  auto* proxy = static_cast<QSortFilterProxyModel*>(table_->model());
  const QModelIndex index = table_->indexAt(pos);
  if (!index.isValid()) return;
  const int row = proxy->mapToSource(index).row();
  const QString rule = substitutions_->ruleAt(row);
  QMenu menu(this);
  menu.addAction(tr("Pin"), this, [this, row] {
    substitutions_->setDecision(row, SubstitutionModel::Decision::Pin);
  });
  menu.addAction(tr("Neutral"), this, [this, row] {
    substitutions_->setDecision(row, SubstitutionModel::Decision::Neutral);
  });
  menu.addAction(tr("Veto"), this, [this, row] {
    substitutions_->setDecision(row, SubstitutionModel::Decision::Veto);
  });
  menu.addSeparator();
  QMenu* at = menu.addMenu(tr("Decide for One Match"));
  const QStringList nodes = matches_.nodesByRule.value(rule);
  for (const QString& node : nodes)
    at->addAction(tr("At %1").arg(node), this,
                  [this, rule, node] { substitutions_->addLocation(rule, node); });
  at->setEnabled(!nodes.isEmpty());
  if (!substitutions_->nodeAt(row).isEmpty())
    menu.addAction(tr("Remove This Match Row"), this,
                   [this, row] { substitutions_->removeLocation(row); });
  menu.addAction(tr("Reset All Decisions"), substitutions_, &SubstitutionModel::resetDecisions);
  menu.exec(table_->viewport()->mapToGlobal(pos));
}

}  // namespace unity::views
