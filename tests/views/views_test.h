#pragma once
// The views' Qt Test suites share one executable (unity_views_tests). Each suite registers itself;
// `unity_views_tests SUITE [QTest options]` runs one suite (CTest runs each as its own test), no
// argument runs them all.
#include <QElapsedTimer>
#include <QObject>
#include <QTimer>

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
class LatenessProbe : public QObject {
 public:
  LatenessProbe() {
    timer_.setTimerType(Qt::PreciseTimer);
    timer_.setInterval(kIntervalMs);
    connect(&timer_, &QTimer::timeout, this, [this] {
      const qint64 now = clock_.nsecsElapsed();
      if (last_ >= 0) worstGapNs_ = std::max(worstGapNs_, now - last_);
      last_ = now;
      ++ticks_;
    });
  }
  void start() {
    clock_.start();
    last_ = -1;
    worstGapNs_ = 0;
    ticks_ = 0;
    timer_.start();
  }
  void stop() { timer_.stop(); }
  // How much later than scheduled the worst tick came, in milliseconds.
  double worstLatenessMs() const { return std::max<double>(0, worstGapNs_ * 1e-6 - kIntervalMs); }
  int ticks() const { return ticks_; }

  static constexpr int kIntervalMs = 10;

 private:
  QTimer timer_;
  QElapsedTimer clock_;
  qint64 last_ = -1;
  qint64 worstGapNs_ = 0;
  int ticks_ = 0;
};

}  // namespace unity::views::testing

#define UNITY_VIEWS_SUITE(Class)                                 \
  static const bool unity_views_suite_##Class [[maybe_unused]] = \
      ::unity::views::testing::registerSuite(#Class,             \
                                             [] { return std::unique_ptr<QObject>(new Class); })
