// Runs the registered Qt Test suites of libunity_views (see views_test.h).
#include <QApplication>
#include <QElapsedTimer>
#include <QtTest>

#include <cstdio>
#include <vector>

#include "views_test.h"

namespace unity::views::testing {
std::map<std::string, SuiteFactory>& suites() {
  static std::map<std::string, SuiteFactory> s;
  return s;
}
}  // namespace unity::views::testing

// With UNITY_TRACE_SLOW_EVENTS=MS set, every event that keeps the GUI thread longer than MS
// milliseconds is printed with its receiver: how the lateness tests' failures are diagnosed.
class TracingApplication : public QApplication {
 public:
  TracingApplication(int& argc, char** argv) : QApplication(argc, argv) {
    threshold_ = qEnvironmentVariableIntValue("UNITY_TRACE_SLOW_EVENTS");
  }
  bool notify(QObject* receiver, QEvent* event) override {
    if (threshold_ <= 0) return QApplication::notify(receiver, event);
    QElapsedTimer t;
    t.start();
    const int type = event->type();
    const bool result = QApplication::notify(receiver, event);
    if (t.elapsed() > threshold_)
      qWarning("slow event: %lld ms in %s '%s', event type %d", t.elapsed(),
               receiver->metaObject()->className(), qPrintable(receiver->objectName()), type);
    return result;
  }

 private:
  int threshold_ = 0;
};

int main(int argc, char** argv) {
  TracingApplication app(argc, argv);
  QApplication::setOrganizationName(QStringLiteral("UnityTests"));
  QApplication::setApplicationName(QStringLiteral("unity_views_tests"));
  auto& suites = unity::views::testing::suites();
  std::vector<char*> args(argv, argv + argc);
  std::vector<std::string> chosen;
  if (args.size() > 1 && suites.count(args[1])) {
    chosen.push_back(args[1]);
    args.erase(args.begin() + 1);
  } else {
    for (const auto& [name, factory] : suites) chosen.push_back(name);
  }
  int failures = 0;
  for (const std::string& name : chosen) {
    std::unique_ptr<QObject> suite = suites.at(name)();
    failures += QTest::qExec(suite.get(), int(args.size()), args.data());
  }
  return failures == 0 ? 0 : 1;
}
