// File > Export Launch…: the shown plan's launch file for Megatron-LM, torchtitan or DeepSpeed,
// written by the use case `unity export` runs (launch::export_launch). Where the framework cannot
// run the plan, the reason is shown and the nearest layout it can run is offered.
#include <fmt/format.h>

#include <QApplication>
#include <QFileDialog>
#include <QFileInfo>
#include <QInputDialog>
#include <QMessageBox>
#include <QStatusBar>

#include <exception>
#include <string>

#include "main_window.h"
#include "unity/core/errors.h"
#include "unity/core/json_io.h"
#include "unity/core/launch/export_launch.h"
#include "unity/views/explorer_document.h"

namespace unity::explorer {

namespace {

// The file a framework's launch usually lives in.
QString launchSuffix(launch::Framework f) {
  switch (f) {
    case launch::Framework::Megatron:
      return QStringLiteral("sh");
    case launch::Framework::Torchtitan:
      return QStringLiteral("toml");
    case launch::Framework::DeepSpeed:
      return QStringLiteral("json");
  }
  return QStringLiteral("txt");
}

}  // namespace

bool MainWindow::exportLaunch(const QString& framework, const QString& file, bool nearest,
                              QString* message) {
  const std::shared_ptr<const Plan> plan = document_->plan(document_->bestMode());
  if (!plan) {
    *message = tr("There is no plan to export yet: open a model and let a plan finish.");
    return false;
  }
  try {
    launch::ExportRequest request;
    request.framework = launch::framework_from_string(framework.toStdString());
    request.nearest = nearest;
    const launch::ExportResult result = launch::export_launch(*plan, request);
    write_text_file_atomic(file.toStdString(), result.file.text);
    const QString name =
        QString::fromStdString(std::string(launch::display_name(request.framework)));
    QStringList lines{tr("Wrote the %1 launch (%2) to %3.")
                          .arg(name, QString::fromStdString(result.spec.describe()), file)};
    if (result.nearest) {
      lines << tr("%1 cannot run the plan as it is: %2.")
                   .arg(name,
                        QString::fromStdString(fmt::format("{}", fmt::join(result.refused, "; "))));
      lines << tr("The plan: %1 ms per iteration; the nearest layout %2 runs: %3 ms.")
                   .arg(plan->summary.iteration_time_ms, 0, 'f', 1)
                   .arg(name)
                   .arg(result.nearest->summary.iteration_time_ms, 0, 'f', 1);
    }
    for (const auto& note : result.file.notes) lines << QString::fromStdString(note);
    *message = lines.join(QLatin1Char('\n'));
    return true;
  } catch (const std::exception& e) {  // a refusal (InputError), or a file that cannot be written
    *message = QString::fromUtf8(e.what());
    return false;
  }
}

void MainWindow::exportLaunchDialog() {
  if (!document_->plan(document_->bestMode())) {
    QMessageBox::information(this, tr("Export Launch"),
                             tr("There is no plan to export yet: open a model and let a plan "
                                "finish."));
    return;
  }
  const QStringList names{QStringLiteral("Megatron-LM"), QStringLiteral("torchtitan"),
                          QStringLiteral("DeepSpeed")};
  const QStringList keys{QStringLiteral("megatron"), QStringLiteral("torchtitan"),
                         QStringLiteral("deepspeed")};
  bool chosen = false;
  const QString picked =
      QInputDialog::getItem(this, tr("Export Launch"),
                            tr("Framework to launch the %1 plan with:")
                                .arg(views::ExplorerDocument::modeTitle(document_->bestMode())),
                            names, 0, false, &chosen);
  if (!chosen) return;
  const QString key = keys[names.indexOf(picked)];
  const QString suffix = launchSuffix(launch::framework_from_string(key.toStdString()));
  const QString suggested =
      QStringLiteral("%1-%2.%3").arg(QFileInfo(currentModel()).completeBaseName(), key, suffix);
  const QString file =
      QFileDialog::getSaveFileName(this, tr("Export Launch"), suggested,
                                   tr("%1 launch (*.%2);;All files (*)").arg(picked, suffix));
  if (file.isEmpty()) return;
  QString message;
  QApplication::setOverrideCursor(Qt::WaitCursor);
  bool written = exportLaunch(key, file, false, &message);
  QApplication::restoreOverrideCursor();
  if (!written) {
    const auto answer = QMessageBox::question(
        this, tr("Export Launch"),
        tr("%1\n\nWrite the nearest layout %2 can run instead? It is planned again, and its "
           "predicted time is shown beside the plan's.")
            .arg(message, picked));
    if (answer != QMessageBox::Yes) return;
    QApplication::setOverrideCursor(Qt::WaitCursor);
    written = exportLaunch(key, file, true, &message);
    QApplication::restoreOverrideCursor();
  }
  if (written) {
    statusBar()->showMessage(message.section(QLatin1Char('\n'), 0, 0), 8000);
    QMessageBox::information(this, tr("Export Launch"), message);
  } else {
    QMessageBox::warning(this, tr("Export Launch"), message);
  }
}

}  // namespace unity::explorer
