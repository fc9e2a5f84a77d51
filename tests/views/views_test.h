#pragma once
// The views' Qt Test suites share one executable (unity_views_tests). Each suite registers itself;
// `unity_views_tests SUITE [QTest options]` runs one suite (CTest runs each as its own test), no
// argument runs them all.
#include <QElapsedTimer>
#include <QObject>
#include <QString>
#include <QTimer>

#include <algorithm>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <string>

namespace unity::views::testing {

using SuiteFactory = std::function<std::unique_ptr<QObject>()>;
std::map<std::string, SuiteFactory>& suites();
inline bool registerSuite(const char* name, SuiteFactory factory) {
  suites().emplace(name, std::move(factory));
  return true;
}

// Measures how late a 10 ms timer fires on the GUI thread: the longest the event loop was blocked.
// A gap between ticks also grows while the GUI thread is ready to run but has no core, which is
// the machine's load and not our code: with both cores busy we measured gaps of 82 ms of which
// 55 ms were such waits. The kernel counts them (the run-queue time in
// /proc/thread-self/schedstat), so the lateness is a gap's time past the interval less the time the
// thread waited in it for a core. Time the GUI thread spends working, sleeping, or waiting on a
// lock or a process still counts: it is how a wait inside free() for a search thread's malloc arena
// was found. Without schedstat it is the wall-clock lateness.
class LatenessProbe : public QObject {
 public:
  LatenessProbe() {
    timer_.setTimerType(Qt::PreciseTimer);
    timer_.setInterval(kIntervalMs);
    connect(&timer_, &QTimer::timeout, this, [this] {
      const qint64 now = clock_.nsecsElapsed(), waited = runQueueWaitNs();
      if (last_ >= 0) {
        const qint64 late = now - last_ - kIntervalMs * 1'000'000LL;
        worstWallNs_ = std::max(worstWallNs_, late);
        worstNs_ = std::max(worstNs_, late - (waited - lastWaited_));
      }
      last_ = now;
      lastWaited_ = waited;
      ++ticks_;
    });
  }
  void start() {
    clock_.start();
    last_ = -1;
    worstWallNs_ = worstNs_ = 0;
    ticks_ = 0;
    timer_.start();
  }
  void stop() { timer_.stop(); }
  // How much later than scheduled the worst tick came, less the time the GUI thread waited for a
  // core, in milliseconds.
  double worstLatenessMs() const { return std::max<double>(0, worstNs_ * 1e-6); }
  // The same by the wall clock alone.
  double worstWallLatenessMs() const { return std::max<double>(0, worstWallNs_ * 1e-6); }
  int ticks() const { return ticks_; }
  // Both measures and the tick count, for a test's message and its log.
  QString report() const {
    return QString("worst GUI lateness %1 ms (wall %2 ms) over %3 ticks")
        .arg(worstLatenessMs(), 0, 'f', 1)
        .arg(worstWallLatenessMs(), 0, 'f', 1)
        .arg(ticks_);
  }

  static constexpr int kIntervalMs = 10;

 private:
  // Nanoseconds this thread has spent ready on a run queue, not running (0 if unknown).
  static qint64 runQueueWaitNs() {
    std::ifstream in("/proc/thread-self/schedstat");
    long long running = 0, waiting = 0;
    return in >> running >> waiting ? waiting : 0;
  }

  QTimer timer_;
  QElapsedTimer clock_;
  qint64 last_ = -1, lastWaited_ = 0;
  qint64 worstWallNs_ = 0, worstNs_ = 0;
  int ticks_ = 0;
};

}  // namespace unity::views::testing

#define UNITY_VIEWS_SUITE(Class)                                 \
  static const bool unity_views_suite_##Class [[maybe_unused]] = \
      ::unity::views::testing::registerSuite(#Class,             \
                                             [] { return std::unique_ptr<QObject>(new Class); })
