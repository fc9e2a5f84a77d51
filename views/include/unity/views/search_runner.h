#pragma once
// Runs unity::optimize_plan on a worker thread and reports it to the GUI through queued signals, at
// most about 30 times a second (DESIGN.md): the search's observer only appends events to a buffer
// under a mutex, and the GUI drains the buffer when a throttled wake-up arrives.
//
// Pause, step and cancel act inside the observer: pausing blocks the search thread in on_event (the
// search is then exactly where the last reported event left it), a step lets it run to the next
// costed candidate and pause again, and cancel sets the core's CancelFlag and releases a paused
// search so it can return its best plan so far.
#include <QElapsedTimer>
#include <QHash>
#include <QList>
#include <QMetaType>
#include <QObject>
#include <QString>
#include <QStringList>

#include <memory>
#include <thread>

#include "unity/core/plan/plan.h"
#include "unity/core/plan/plan_optimizer.h"

namespace unity::views {

// The state of a search as the GUI shows it.
struct SearchSnapshot {
  qint64 step = 0;
  qint64 candidates = 0;
  qint64 queueSize = 0;
  double startMs = 0;      // the input graph's predicted iteration time
  double bestMs = 0;       // best so far (of the piece being searched when the graph is split; the
                           // whole plan's once finished)
  double candidateMs = 0;  // the last costed candidate
  double elapsed = 0;      // seconds since the search started
  double candidatesPerSecond = 0;
  int segment = -1;  // graph splitting: the piece being searched (-1: the whole graph)
  int segments = 0;
  // The best whole plan so far that fits (0: none yet): what the whole-graph searches and each
  // finished search report, never a piece's time; it only falls.
  double planBestMs = 0;
  QString phase;          // which of a plan's searches runs ("joint search from the model", ...)
  QString rule;           // the last candidate's substitution
  QList<NodeId> matched;  // where it applied (node ids of the parent candidate)
  QStringList matchedNames;
  QString status;  // "completed", "budget", "cancelled" once finished
};

// One costed candidate, for the chart.
struct CandidatePoint {
  double elapsed = 0;  // seconds since the search started
  double ms = 0;       // predicted time of the candidate (of its piece when the graph is split)
  bool newBest = false;
  QString rule;
  int segment = -1;     // the piece of a split graph it belongs to (-1: the whole graph)
  bool repeat = false;  // the previous batch's last candidate again, now marked as a new best
};

struct RuleActivity {
  int costed = 0;    // candidates this rule produced
  int newBests = 0;  // of which improved on the best so far
};

class SearchRunner : public QObject {
  Q_OBJECT

 public:
  enum class State { Idle, Running, Paused, Cancelling, Finished, Failed };
  Q_ENUM(State)

  static constexpr int kUpdateIntervalMs = 33;  // ~30 updates a second at most

  explicit SearchRunner(QObject* parent = nullptr);
  ~SearchRunner() override;  // cancels and waits for the worker

  // Starts a search (options.observer and options.cancel are the runner's). False when one runs.
  // `paused`: hold the search at its first event (to step through it from the start).
  bool start(std::shared_ptr<const Graph> model, std::shared_ptr<const MachineSpec> machine,
             OptimizeOptions options, bool paused = false);
  // Replays a search recorded in a project: its events reach the GUI as a live search's would
  // (pause, step and cancel work the same), `speed` times as fast as they were recorded (0: as
  // fast as they come), and it ends with the plan the search found (null: the best-cost events
  // only, then Failed). The mode is the recorded search's.
  bool startReplay(std::vector<SearchEvent> events, std::shared_ptr<const Plan> plan,
                   const QString& mode, double speed, bool paused = false);
  // Records the searches started from now on into this project file (empty: none), the model
  // under `modelSource`: the model, the machine, every event (on the project's own writer
  // thread), and the plan. A recording failure never fails the search: see recordingError().
  void setRecording(const QString& projectFile, const QString& modelSource);
  QString recordingFile() const { return recordFile_; }
  qint64 recordedSearchId() const { return recordedSearchId_; }  // 0: the last one was not
  QString recordingError() const { return recordingError_; }
  bool isReplay() const { return replay_; }
  void pause();
  void resume();
  void step();  // from paused: run to the next costed candidate, then pause again
  void cancel();
  // Blocks the GUI until the worker is done (tests and --screenshot only).
  bool waitForFinished(int timeoutMs);

  State state() const { return state_; }
  bool isActive() const;  // running, paused or cancelling
  QString mode() const { return QString::fromStdString(options_.mode); }
  const OptimizeOptions& options() const { return options_; }
  std::shared_ptr<const Plan> plan() const { return plan_; }
  QString error() const { return error_; }
  const SearchSnapshot& snapshot() const { return snapshot_; }
  const QList<CandidatePoint>& points() const { return points_; }
  const QHash<QString, RuleActivity>& ruleActivity() const { return activity_; }
  int updatesDelivered() const { return updates_; }

  static QString stateName(State state);

 signals:
  void started();
  void progress(const unity::views::SearchSnapshot& snapshot);               // throttled
  void candidatesCosted(const QList<unity::views::CandidatePoint>& points);  // since the last one
  void pausedAt(const unity::views::SearchSnapshot& snapshot);
  void resumed();
  void stateChanged(unity::views::SearchRunner::State state);
  void finished(std::shared_ptr<const unity::Plan> plan, const QString& status);
  void failed(const QString& message);
  void recorded(qint64 searchId);  // the search and its plan are in the project file

 private:
  class Observer;
  // What the search reported since the last drain; `last`: after the search ended.
  void drain(bool last);
  void onWorkerDone(std::shared_ptr<const Plan> plan, QString error, qint64 searchId,
                    QString recordingError);
  void begin(OptimizeOptions options, bool paused);
  void setState(State s);

  State state_ = State::Idle;
  OptimizeOptions options_;
  std::unique_ptr<Observer> observer_;
  std::unique_ptr<CancelFlag> cancel_;
  std::thread worker_;
  std::shared_ptr<const Plan> plan_;
  QString error_;
  SearchSnapshot snapshot_;
  QList<CandidatePoint> points_;
  QHash<QString, RuleActivity> activity_;
  int updates_ = 0;
  QString recordFile_;
  QString recordSource_;
  qint64 recordedSearchId_ = 0;
  QString recordingError_;
  bool replay_ = false;
  int reportedHold_ = 0;  // the observer's last hold reported as pausedAt
  // Whether the last candidate went into points_: its NewBest, which may come in the next batch,
  // marks it rather than adding a point.
  bool lastPointStored_ = false;
};

}  // namespace unity::views

Q_DECLARE_METATYPE(unity::views::SearchSnapshot)
Q_DECLARE_METATYPE(unity::views::CandidatePoint)
Q_DECLARE_METATYPE(std::shared_ptr<const unity::Plan>)
