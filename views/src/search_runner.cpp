#include "unity/views/search_runner.h"

#include <QCoreApplication>
#include <QDeadlineTimer>
#include <QElapsedTimer>
#include <QThread>
#include <QTimer>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <vector>

#include "search_recording.h"
#include "thread_priority.h"
#include "unity/core/errors.h"

namespace unity::views {

namespace {
constexpr qsizetype kMaxPoints = 20000;  // the chart keeps every new best beyond this
constexpr int kWorkerNiceness = 10;
}  // namespace

// Lives on the search thread's side: buffers events and holds the search while paused.
class SearchRunner::Observer : public SearchObserver {
 public:
  // The core's elapsed_seconds restart with each piece of a split graph: the runner keeps its own
  // clock so that the chart's time axis runs on.
  struct Stamped {
    SearchEvent event;
    double seconds;
  };

  explicit Observer(CancelFlag* cancel) : cancel_(cancel) { clock_.start(); }

  void on_event(const SearchEvent& e) override {
    std::vector<std::vector<Stamped>> spent;
    {
      std::lock_guard lock(bufferMutex_);
      pending_.push_back({e, double(clock_.nsecsElapsed()) * 1e-9});
      spent.swap(spent_);
    }
    spent.clear();  // the events the GUI gave back, freed here (see giveBack)
    std::unique_lock gate(gateMutex_);
    if (stepArmed_ && e.kind == SearchEvent::Kind::CandidateCosted) {
      stepArmed_ = false;
      paused_ = true;
    }
    if (!paused_ || cancel_->load()) return;
    waiting_ = true;
    ++holds_;
    wake_.wait(gate, [this] { return !paused_ || cancel_->load(); });
    waiting_ = false;
  }

  // Nothing when the search thread holds the buffer (see thread_priority.h), unless `wait`: the
  // last drain, after the search.
  std::vector<Stamped> take(bool wait) {
    const auto lock = guiLock(bufferMutex_, wait);
    if (!lock) return {};
    std::vector<Stamped> out;
    out.swap(pending_);
    return out;
  }
  // The events the GUI has read, for the search thread that allocated them to free at its next
  // event (see thread_priority.h); the last ones go with the observer once the thread has ended.
  void giveBack(std::vector<Stamped> events) {
    if (events.empty()) return;
    read_.push_back(std::move(events));
    const auto lock = guiLock(bufferMutex_, false);
    if (!lock) return;
    for (auto& r : read_) spent_.push_back(std::move(r));
    read_.clear();
  }
  void setPaused(bool paused, bool step = false) {
    {
      std::lock_guard gate(gateMutex_);
      paused_ = paused;
      stepArmed_ = step;
      // A released search no longer waits, even before its thread wakes up.
      if (!paused) waiting_ = false;
    }
    wake_.notify_all();
  }
  void release() { wake_.notify_all(); }
  // How many times the search has been held so far, when it is held now; -1 when it runs.
  // (-1 too when the search thread holds the gate: the next tick asks again.)
  int holdNow() {
    const auto gate = guiLock(gateMutex_, false);
    return gate && waiting_ ? holds_ : -1;
  }

 private:
  CancelFlag* cancel_;
  QElapsedTimer clock_;
  std::mutex bufferMutex_;
  std::vector<Stamped> pending_;
  std::vector<std::vector<Stamped>> spent_;  // given back, for the search thread to free
  std::vector<std::vector<Stamped>> read_;   // the GUI's, not yet handed over
  std::mutex gateMutex_;
  std::condition_variable wake_;
  bool paused_ = false;
  bool stepArmed_ = false;
  bool waiting_ = false;
  int holds_ = 0;
};

SearchRunner::SearchRunner(QObject* parent) : QObject(parent) {
  qRegisterMetaType<SearchSnapshot>();
  qRegisterMetaType<CandidatePoint>();
  qRegisterMetaType<QList<CandidatePoint>>();
  qRegisterMetaType<std::shared_ptr<const Plan>>();
  qRegisterMetaType<SearchRunner::State>();
}

SearchRunner::~SearchRunner() {
  if (cancel_) cancel_->store(true);
  if (observer_) observer_->release();
  if (worker_.joinable()) worker_.join();
}

QString SearchRunner::stateName(State s) {
  switch (s) {
    case State::Idle:
      return tr("idle");
    case State::Running:
      return tr("running");
    case State::Paused:
      return tr("paused");
    case State::Cancelling:
      return tr("cancelling");
    case State::Finished:
      return tr("finished");
    case State::Failed:
      return tr("failed");
  }
  return {};
}

bool SearchRunner::isActive() const {
  return state_ == State::Running || state_ == State::Paused || state_ == State::Cancelling;
}

void SearchRunner::setState(State s) {
  if (s == state_) return;
  state_ = s;
  emit stateChanged(s);
}

void SearchRunner::setRecording(const QString& projectFile, const QString& modelSource) {
  recordFile_ = projectFile;
  recordSource_ = modelSource;
}

void SearchRunner::begin(OptimizeOptions options, bool paused) {
  if (worker_.joinable()) worker_.join();
  cancel_ = std::make_unique<CancelFlag>(false);
  observer_ = std::make_unique<Observer>(cancel_.get());
  reportedHold_ = 0;
  lastPointStored_ = false;
  observer_->setPaused(paused);
  options.observer = observer_.get();
  options.cancel = cancel_.get();
  options_ = options;
  plan_.reset();
  error_.clear();
  recordedSearchId_ = 0;
  recordingError_.clear();
  snapshot_ = SearchSnapshot();
  points_.clear();
  activity_.clear();
  updates_ = 0;
  setState(State::Running);
  emit started();

  // The GUI drains the buffer on a timer: at most one update per interval, whatever the event rate.
  auto* timer = new QTimer(this);
  timer->setInterval(kUpdateIntervalMs);
  connect(timer, &QTimer::timeout, this, [this] { drain(false); });
  connect(this, &SearchRunner::finished, timer, &QObject::deleteLater);
  connect(this, &SearchRunner::failed, timer, &QObject::deleteLater);
  timer->start();
}

bool SearchRunner::start(std::shared_ptr<const Graph> model,
                         std::shared_ptr<const MachineSpec> machine, OptimizeOptions options,
                         bool paused) {
  if (isActive() || !model || !machine) return false;
  replay_ = false;
  begin(std::move(options), paused);
  worker_ = std::thread([this, model, machine, options = options_, file = recordFile_,
                         source = recordSource_] {
    lowerCurrentThreadPriority(kWorkerNiceness);
    std::shared_ptr<const Plan> plan;
    QString error;
    RecordingResult recording;
    try {
      plan = std::make_shared<const Plan>(
          file.isEmpty() ? optimize_plan(*model, *machine, options)
                         : optimizeRecorded(*model, *machine, options, file, source, recording));
    } catch (const InputError& e) {
      error = QString::fromUtf8(e.what());
    } catch (const std::exception& e) {
      error = tr("internal error: %1").arg(QString::fromUtf8(e.what()));
    }
    QMetaObject::invokeMethod(
        this,
        [this, plan, error, recording] {
          onWorkerDone(plan, error, recording.searchId, recording.error);
        },
        Qt::QueuedConnection);
  });
  return true;
}

bool SearchRunner::startReplay(std::vector<SearchEvent> events, std::shared_ptr<const Plan> plan,
                               const QString& mode, double speed, bool paused) {
  if (isActive() || events.empty()) return false;
  replay_ = true;
  OptimizeOptions options;
  options.mode = mode.toStdString();
  begin(options, paused);
  worker_ = std::thread([this, events = std::move(events), plan, speed, observer = observer_.get(),
                         cancel = cancel_.get()] {
    lowerCurrentThreadPriority(kWorkerNiceness);
    // The recorded clock restarts with each piece of a split graph: pace by the time between
    // consecutive events instead.
    using clock = std::chrono::steady_clock;
    auto due = clock::now();
    double previous = 0;
    for (const SearchEvent& e : events) {
      if (cancel->load()) break;
      if (speed > 0) {
        const double gap = std::max(0.0, e.elapsed_seconds - previous);
        due += std::chrono::duration_cast<clock::duration>(
            std::chrono::duration<double>(std::min(gap, 1.0) / speed));
        std::this_thread::sleep_until(due);
        if (clock::now() > due + std::chrono::milliseconds(200)) due = clock::now();
      }
      previous = e.elapsed_seconds;
      observer->on_event(e);
    }
    const QString error = plan ? QString() : tr("the recorded search has no plan");
    QMetaObject::invokeMethod(
        this, [this, plan, error] { onWorkerDone(plan, error, 0, {}); }, Qt::QueuedConnection);
  });
  return true;
}

void SearchRunner::pause() {
  if (state_ != State::Running || !observer_) return;
  observer_->setPaused(true);
}

void SearchRunner::resume() {
  if (!observer_ || (state_ != State::Paused && state_ != State::Running)) return;
  observer_->setPaused(false);
  if (state_ == State::Paused) {
    setState(State::Running);
    emit resumed();
  }
}

void SearchRunner::step() {
  if (!observer_ || state_ != State::Paused) return;
  observer_->setPaused(false, /*step=*/true);
  setState(State::Running);
  emit resumed();
}

void SearchRunner::cancel() {
  if (!isActive()) return;
  cancel_->store(true);
  observer_->release();
  setState(State::Cancelling);
}

bool SearchRunner::waitForFinished(int timeoutMs) {
  QDeadlineTimer deadline(timeoutMs);
  while (isActive() && !deadline.hasExpired()) {
    QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
    QThread::msleep(2);
  }
  return !isActive();
}

void SearchRunner::drain(bool last) {
  if (!observer_) return;
  std::vector<Observer::Stamped> events = observer_->take(last);
  QList<CandidatePoint> fresh;
  for (const auto& [e, seconds] : events) {
    SearchSnapshot& s = snapshot_;
    s.step = e.step;
    s.candidates = e.candidates_evaluated;
    s.queueSize = e.queue_size;
    s.elapsed = seconds;
    // The best so far never rises: the least of what the lineages report, per piece (a new piece
    // starts again); the whole search's start and end say the whole plan's.
    const bool restart = e.segment != s.segment || e.kind == SearchEvent::Kind::Started ||
                         e.kind == SearchEvent::Kind::Finished;
    s.segment = e.segment;
    s.segments = e.segments;
    if (!e.phase.empty()) s.phase = QString::fromStdString(e.phase);
    if (e.best_ms > 0 && e.best_fits && e.segment < 0 && e.kind != SearchEvent::Kind::Started)
      s.planBestMs = s.planBestMs > 0 ? std::min(s.planBestMs, e.best_ms) : e.best_ms;
    if (e.best_ms > 0 && (e.best_fits || e.kind == SearchEvent::Kind::Finished))
      s.bestMs = restart || s.bestMs <= 0 ? e.best_ms : std::min(s.bestMs, e.best_ms);
    switch (e.kind) {
      case SearchEvent::Kind::Started:
        if (s.startMs == 0) s.startMs = e.best_ms;
        break;
      case SearchEvent::Kind::CandidateCosted: {
        s.candidateMs = e.candidate_ms;
        s.rule = QString::fromStdString(e.rule);
        s.matched = QList<NodeId>(e.matched_nodes.begin(), e.matched_nodes.end());
        s.matchedNames.clear();
        for (const auto& n : e.matched_names) s.matchedNames << QString::fromStdString(n);
        ++activity_[s.rule].costed;
        const CandidatePoint p{seconds, e.candidate_ms, false, s.rule, e.segment};
        fresh.append(p);
        lastPointStored_ = points_.size() < kMaxPoints;
        if (lastPointStored_) points_.append(p);
        break;
      }
      case SearchEvent::Kind::NewBest:
        ++activity_[QString::fromStdString(e.rule)].newBests;
        if (!fresh.isEmpty()) {
          fresh.last().newBest = true;
        } else {  // its candidate went out with the previous batch: tell the chart again
          CandidatePoint again{seconds, e.candidate_ms, true, QString::fromStdString(e.rule),
                               e.segment};
          again.repeat = true;
          fresh.append(again);
        }
        if (lastPointStored_)
          points_.last().newBest = true;
        else
          points_.append(
              {seconds, e.candidate_ms, true, QString::fromStdString(e.rule), e.segment});
        break;
      case SearchEvent::Kind::Finished:
        s.status = QString::fromStdString(e.status);
        break;
      default:
        break;
    }
  }
  if (snapshot_.elapsed > 0)
    snapshot_.candidatesPerSecond = double(snapshot_.candidates) / snapshot_.elapsed;
  const bool any = !events.empty();
  observer_->giveBack(std::move(events));
  if (any) {
    ++updates_;
    if (!fresh.isEmpty()) emit candidatesCosted(fresh);
    emit progress(snapshot_);
  }
  // Reported once per hold: a hold that was just released is not reported again.
  const int hold = observer_->holdNow();
  if (state_ == State::Running && hold >= 0 && hold != reportedHold_) {
    reportedHold_ = hold;
    setState(State::Paused);
    emit pausedAt(snapshot_);
  }
}

void SearchRunner::onWorkerDone(std::shared_ptr<const Plan> plan, QString error, qint64 searchId,
                                QString recordingError) {
  // Not joined here: the thread may still wait for a core to return, and the GUI does not wait for
  // it (the next search or the destructor joins it). Its last event came before this call.
  drain(true);
  plan_ = std::move(plan);
  error_ = std::move(error);
  recordedSearchId_ = searchId;
  recordingError_ = std::move(recordingError);
  if (recordedSearchId_ > 0) emit recorded(recordedSearchId_);
  if (!error_.isEmpty()) {
    setState(State::Failed);
    emit failed(error_);
    return;
  }
  // A replay cancelled before its Finished event ends as the user left it.
  if (replay_ && cancel_ && cancel_->load() && snapshot_.status.isEmpty())
    snapshot_.status = QStringLiteral("cancelled");
  if (snapshot_.status.isEmpty())
    snapshot_.status = QString::fromStdString(plan_->summary.search_status);
  if (snapshot_.status.isEmpty()) snapshot_.status = QStringLiteral("completed");
  // The plan's own figures at the end: they include work that reported no events (the core's
  // quiet sequential pass of a joint search).
  snapshot_.bestMs = plan_->summary.iteration_time_ms;
  if (plan_->summary.fits_in_memory &&
      (snapshot_.planBestMs <= 0 || snapshot_.bestMs < snapshot_.planBestMs))
    snapshot_.planBestMs = snapshot_.bestMs;
  snapshot_.candidates =
      std::max<qint64>(snapshot_.candidates, plan_->summary.candidates_evaluated);
  setState(State::Finished);
  emit progress(snapshot_);
  emit finished(plan_, snapshot_.status);
}

}  // namespace unity::views
