#include "about_text.h"

#include <QObject>

#include "unity/executor/backends.h"
#include "unity/projects/sqlite_info.h"
#include "unity/rules/z3_info.h"

namespace unity::explorer {

QString aboutText() {
  const auto q = [](const std::string& s) { return QString::fromStdString(s).toHtmlEscaped(); };
  QString backends;
  for (const executor::BackendInfo& b : executor::available_backends()) {
    backends +=
        QObject::tr("<li><b>%1</b>: %2<br><small>%3</small></li>")
            .arg(q(b.name), b.available ? QObject::tr("available") : QObject::tr("unavailable"),
                 q(b.detail));
  }
  return QObject::tr(
             "<h3>Unity %1</h3>"
             "<p>Joint optimisation of algebraic transformations and parallelisation of DNN "
             "training on a Parallel Computation Graph (Unger et al., OSDI'22).</p>"
             "<p>Qt %2 &middot; Z3 %3 &middot; SQLite %4</p>"
             "<p>Execution backends:</p><ul>%5</ul>")
      .arg(QStringLiteral(UNITY_VERSION), QString::fromLatin1(qVersion()), q(rules::z3_version()),
           q(projects::sqlite_version()), backends);
}

}  // namespace unity::explorer
