#pragma once
// The search view: a live joint (or sequential) search of the open model. The model's PCG keeps one
// layout while the search runs and each costed candidate's rewrite glows where it applied; the
// chart shows every candidate and the best cost over time; the table holds one pin / neutral / veto
// decision per rule or rule@node, which the next run honours. Pause blocks the search at its next
// event, Step lets one more candidate through, Cancel keeps the best plan so far.
#include <QElapsedTimer>
#include <QFutureWatcher>
#include <QHash>
#include <QWidget>

#include "unity/views/search_runner.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QPushButton;
class QSpinBox;
class QTableView;

namespace unity::views {

class ExplorerDocument;
class GraphView;
class LayoutRequestPanel;
class LayoutService;
class SearchChart;
class SearchStatsPanel;
class SubstitutionModel;

class SearchView : public QWidget {
  Q_OBJECT

 public:
  explicit SearchView(ExplorerDocument* document, QWidget* parent = nullptr,
                      LayoutService* service = nullptr);

  // Starts a search of the document's model on its machine with the table's pins and vetoes;
  // `paused`: held at its first event, to step through.
  bool startSearch(bool paused = false);
  // Replays a search recorded in the open project (ProjectSession) at `speed` times its recorded
  // pace (0: as fast as the view takes it); false when there is no such search or one runs. The
  // events load off the GUI thread, so the replay starts a moment later.
  bool replaySearch(qint64 searchId, double speed = 1.0);
  // The recorded searches of the open project that the open model and machine can replay.
  QList<qint64> replayableSearches() const;
  // The table's decisions from a project: everything else neutral.
  void setDecisions(const QStringList& pins, const QStringList& vetoes);
  void setMode(const QString& mode);  // joint or sequential
  void setBudget(int budget);
  void setAlpha(double alpha);

  SearchRunner* runner() const { return runner_; }
  SubstitutionModel* substitutions() const { return substitutions_; }
  // Pins of the large-model layout (pipeline depth, micro-batches, recomputation, ZeRO).
  LayoutRequestPanel* layoutRequest() const { return layoutRequest_; }
  GraphView* graphView() const { return graph_; }
  SearchChart* chart() const { return chart_; }
  QTableView* substitutionTable() const { return table_; }
  QPushButton* button(const QString& name) const;  // "search", "pause", "step", "resume", "cancel"
  QString statusText() const;
  QString statsText() const;  // best, candidates, queue, rate, current candidate
  bool busy() const;
  // Matches of each rule in the model, counted off the GUI thread; true once they are in the table.
  bool matchCountsReady() const { return matchesReady_; }

 signals:
  void busyChanged(bool busy);
  void searchFinished(const QString& mode);

 private:
  struct MatchCounts {
    quint64 generation = 0;
    QHash<QString, int> byLocation;           // "RULE" -> matches
    QHash<QString, QStringList> nodesByRule;  // where each match starts
  };
  struct ReplayData {
    qint64 id = 0;
    quint64 generation = 0;
    double speed = 1;
    QString mode;
    std::vector<SearchEvent> events;
    std::shared_ptr<const Plan> plan;
    QString error;
  };
  void onModelChanged();
  void onReplayLoaded();
  void onProgress(const SearchSnapshot& s);
  void onCandidates(const QList<CandidatePoint>& points);
  void onFinished(std::shared_ptr<const Plan> plan, const QString& status);
  void onStateChanged(SearchRunner::State state);
  void showTableMenu(const QPoint& pos);
  void countMatches();
  void refreshRecorded();
  void storeDecisions();
  void applyMatchCounts();
  QList<NodeId> baseNodes(const SearchSnapshot& s) const;

  ExplorerDocument* document_;
  SearchRunner* runner_;
  SubstitutionModel* substitutions_;
  GraphView* graph_;
  SearchChart* chart_;
  QTableView* table_;
  QCheckBox* showAllRules_;
  QComboBox* mode_;
  QDoubleSpinBox* alpha_;
  QSpinBox* budget_;
  LayoutRequestPanel* layoutRequest_;
  QPushButton* search_;
  QPushButton* pause_;
  QPushButton* step_;
  QPushButton* resume_;
  QPushButton* cancel_;
  QLabel* status_;
  QComboBox* recorded_;
  QComboBox* replaySpeed_;
  QPushButton* replay_;
  QFutureWatcher<ReplayData> replayLoader_;
  bool applyingDecisions_ = false;
  SearchStatsPanel* stats_;
  QElapsedTimer lastActivityUpdate_;
  qint64 lastHighlighted_ = -1;
  quint64 runGeneration_ = 0;
  bool matchesReady_ = false;
  QFutureWatcher<MatchCounts> matchWatcher_;
  MatchCounts matches_;
};

}  // namespace unity::views
