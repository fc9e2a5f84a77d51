#include "main_window.h"

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QElapsedTimer>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QGuiApplication>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QSettings>
#include <QStatusBar>

#include <exception>

#include "about_text.h"
#include "unity/core/errors.h"
#include "unity/core/machine_spec.h"
#include "unity/core/model_loader.h"
#include "unity/core/model_zoo.h"
#include "unity/views/model_summary_view.h"

namespace unity::explorer {

namespace {
constexpr int kMaxRecent = 8;
constexpr auto kRecentKey = "recentModels";
constexpr auto kLastDirKey = "lastModelDirectory";
}  // namespace

QStringList MainWindow::viewNames() { return {QStringLiteral("summary")}; }

MainWindow::MainWindow(bool rememberRecent, QWidget* parent)
    : QMainWindow(parent),
      rememberRecent_(rememberRecent),
      summary_(new views::ModelSummaryView(this)),
      machineLabel_(new QLabel(this)) {
  setCentralWidget(summary_);
  setWindowTitle(tr("Unity Explorer"));
  createMenus();
  statusBar()->addPermanentWidget(machineLabel_);
  machineLabel_->setText(tr("No machine selected"));
  statusBar()->showMessage(tr("Ready"));
}

void MainWindow::createMenus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  QAction* open = file->addAction(tr("&Open Model\u2026"), this, &MainWindow::openModelDialog);
  open->setShortcut(QKeySequence::Open);
  open->setStatusTip(tr("Open an ONNX file or a Unity model JSON file"));

  QMenu* zoo = file->addMenu(tr("Open &Zoo Model"));
  for (const zoo::ModelInfo& m : zoo::models()) {
    const QString name = QString::fromStdString(m.name);
    QAction* a = zoo->addAction(name, this, [this, name] { openModel(name); });
    a->setStatusTip(tr("%1 (batch %2 per device)").arg(QString::fromStdString(m.description)).arg(m.default_batch));
  }

  recentMenu_ = file->addMenu(tr("Open &Recent"));
  rebuildRecentMenu();

  file->addSeparator();
  QAction* quit = file->addAction(tr("&Quit"), qApp, &QApplication::quit);
  quit->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Q));  // QKeySequence::Quit is empty on some desktops
  quit->setMenuRole(QAction::QuitRole);

  QMenu* view = menuBar()->addMenu(tr("&View"));
  auto* views = new QActionGroup(this);
  QAction* summary = view->addAction(tr("Model &Summary"));
  summary->setCheckable(true);
  summary->setChecked(true);
  summary->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_1));
  views->addAction(summary);
  view->addSeparator();
  QAction* reload = view->addAction(tr("&Reload Model"), this, &MainWindow::reloadModel);
  reload->setShortcut(QKeySequence::Refresh);
  reload->setStatusTip(tr("Read the current model again (after editing its file)"));
  QAction* statusBarToggle = view->addAction(tr("Status &Bar"));
  statusBarToggle->setCheckable(true);
  statusBarToggle->setChecked(true);
  connect(statusBarToggle, &QAction::toggled, statusBar(), &QWidget::setVisible);

  QMenu* help = menuBar()->addMenu(tr("&Help"));
  QAction* about = help->addAction(tr("&About Unity"), this, &MainWindow::showAbout);
  about->setMenuRole(QAction::AboutRole);
  help->addAction(tr("About &Qt"), qApp, &QApplication::aboutQt)->setMenuRole(QAction::AboutQtRole);
}

bool MainWindow::loadModel(const QString& spec, QString* error) {
  QElapsedTimer timer;
  timer.start();
  try {
    // File names go to the core in the local 8-bit encoding so that non-ASCII paths open.
    const Graph graph = load_model(QFile::encodeName(spec).toStdString());
    summary_->setGraph(graph);
  } catch (const InputError& e) {
    if (error) *error = QString::fromUtf8(e.what());
    return false;
  } catch (const std::exception& e) {
    if (error) *error = tr("internal error: %1").arg(QString::fromUtf8(e.what()));
    return false;
  }
  currentSpec_ = spec;
  const QFileInfo info(spec);
  const QString shown = info.exists() ? info.fileName() : spec;
  setWindowTitle(tr("%1 \u2014 Unity Explorer").arg(shown));
  setWindowFilePath(info.exists() ? info.absoluteFilePath() : QString());
  statusBar()->showMessage(tr("Loaded %1 in %2 ms").arg(shown).arg(timer.elapsed()));
  addRecent(info.exists() ? info.absoluteFilePath() : spec);
  return true;
}

bool MainWindow::showView(const QString& name) {
  // The summary is the only view so far; the PCG, topology, search, compare and run views join it.
  return viewNames().contains(name);
}

bool MainWindow::loadMachine(const QString& spec, const MachineSelection& selection, QString* error) {
  try {
    const MachineSpec machine = load_machine(QFile::encodeName(spec).toStdString(), selection);
    const QString device = QString::fromStdString(machine.device(0).name);
    machineLabel_->setText(machine.num_nodes > 1
                               ? tr("Machine: %1 · %2 nodes × %3 %4")
                                     .arg(QString::fromStdString(machine.name))
                                     .arg(machine.num_nodes)
                                     .arg(machine.devices_per_node)
                                     .arg(device)
                               : tr("Machine: %1 · %2 × %3")
                                     .arg(QString::fromStdString(machine.name))
                                     .arg(machine.num_devices())
                                     .arg(device));
    machineLabel_->setToolTip(QString::fromStdString(machine.description));
  } catch (const InputError& e) {
    if (error) *error = QString::fromUtf8(e.what());
    return false;
  } catch (const std::exception& e) {
    if (error) *error = tr("internal error: %1").arg(QString::fromUtf8(e.what()));
    return false;
  }
  return true;
}

void MainWindow::openModelDialog() {
  QSettings settings;
  const QString path = QFileDialog::getOpenFileName(
      this, tr("Open Model"), settings.value(kLastDirKey).toString(),
      tr("Models (*.onnx *.json);;ONNX models (*.onnx);;Unity model JSON (*.json);;All files (*)"));
  if (path.isEmpty()) return;
  if (rememberRecent_) settings.setValue(kLastDirKey, QFileInfo(path).absolutePath());
  openModel(path);
}

void MainWindow::openModel(const QString& spec) {
  QGuiApplication::setOverrideCursor(Qt::WaitCursor);
  QString error;
  const bool ok = loadModel(spec, &error);
  QGuiApplication::restoreOverrideCursor();
  if (!ok) QMessageBox::warning(this, tr("Cannot open model"), tr("Cannot open %1:\n\n%2").arg(spec, error));
}

void MainWindow::reloadModel() {
  if (!currentSpec_.isEmpty()) openModel(currentSpec_);
}

void MainWindow::showAbout() {
  QGuiApplication::setOverrideCursor(Qt::WaitCursor);  // probing the CUDA driver can take a moment
  const QString text = aboutText();
  QGuiApplication::restoreOverrideCursor();
  QMessageBox::about(this, tr("About Unity"), text);
}

void MainWindow::addRecent(const QString& spec) {
  if (!rememberRecent_) return;
  QSettings settings;
  QStringList recent = settings.value(kRecentKey).toStringList();
  recent.removeAll(spec);
  recent.prepend(spec);
  while (recent.size() > kMaxRecent) recent.removeLast();
  settings.setValue(kRecentKey, recent);
  rebuildRecentMenu();
}

void MainWindow::rebuildRecentMenu() {
  recentMenu_->clear();
  const QStringList recent = rememberRecent_ ? QSettings().value(kRecentKey).toStringList() : QStringList();
  for (const QString& spec : recent) {
    recentMenu_->addAction(spec, this, [this, spec] { openModel(spec); });
  }
  recentMenu_->setEnabled(!recent.isEmpty());
  if (recent.isEmpty()) return;
  recentMenu_->addSeparator();
  recentMenu_->addAction(tr("&Clear Recent"), this, [this] {
    QSettings().remove(kRecentKey);
    rebuildRecentMenu();
  });
}

}  // namespace unity::explorer
