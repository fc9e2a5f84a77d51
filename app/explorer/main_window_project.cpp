// The main window's project files (.unity): open, save as, close, and what opening one shows.
// While a project is open the search view records its searches and the run view its runs there
// (on their workers' own connections), and the substitution table's decisions are kept in it.
#include <QAction>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QMenu>
#include <QMessageBox>
#include <QSettings>
#include <QStatusBar>
#include <QTabWidget>
#include <QtConcurrent/QtConcurrentRun>

#include "machine_bar.h"
#include "main_window.h"
#include "unity/views/explorer_document.h"
#include "unity/views/model_summary_view.h"
#include "unity/views/run_view.h"
#include "unity/views/search_view.h"
#include "unity/views/substitution_model.h"

namespace unity::explorer {

namespace {
constexpr auto kLastProjectDirKey = "lastProjectDirectory";
const QString kProjectFilter = QObject::tr("Unity projects (*.unity);;All files (*)");

bool isProjectFile(const QString& path) {
  return QFileInfo(path).suffix().compare(QLatin1String("unity"), Qt::CaseInsensitive) == 0;
}
}  // namespace

void MainWindow::createProjectMenu(QMenu* file) {
  file->addSeparator();
  QAction* open = file->addAction(tr("Open &Project…"), this, &MainWindow::openProjectDialog);
  open->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_O));
  open->setStatusTip(
      tr("Open a Unity project (.unity): its model, machine, plans, recorded "
         "searches and runs"));
  QAction* save = file->addAction(tr("&Save Project As…"), this, &MainWindow::saveProjectDialog);
  save->setShortcut(QKeySequence::SaveAs);
  save->setStatusTip(
      tr("Keep this session's model, machine, plans and decisions in a new project "
         "file, and record searches and runs there from now on"));
  QAction* close = file->addAction(tr("&Close Project"), this, &MainWindow::closeProject);
  close->setStatusTip(tr("Stop recording into the project (the model stays open)"));
  connect(file, &QMenu::aboutToShow, close,
          [this, close] { close->setEnabled(document_->project()->isOpen()); });
}

QString MainWindow::projectFile() const { return document_->project()->file(); }

void MainWindow::updateProjectLabel() {
  const views::ProjectSession* project = document_->project();
  projectLabel_->setText(
      project->isOpen() ? tr("Project: %1").arg(QFileInfo(project->file()).fileName()) : QString());
  projectLabel_->setToolTip(project->isOpen() ? QFileInfo(project->file()).absoluteFilePath()
                                              : QString());
  updateTitle();
}

void MainWindow::openRecent(const QString& spec) {
  if (isProjectFile(spec))
    openProject(spec);
  else
    openModel(spec);
}

bool MainWindow::loadProject(const QString& file, bool create, bool showContents, QString* error) {
  views::ProjectSession* project = document_->project();
  const bool exists = QFileInfo::exists(file);
  project->close();
  if (!(exists ? project->open(file, error) : create && project->create(file, error))) {
    if (!exists && !create && error) *error = tr("no such file");
    return false;
  }
  if (!exists || !showContents) return true;
  const views::ProjectContents contents = views::ProjectSession::readContents(file);
  if (!contents.error.isEmpty()) {
    if (error) *error = contents.error;
    project->close();
    return false;
  }
  showProjectContents(contents);
  return true;
}

void MainWindow::openProject(const QString& file) {
  QString error;
  views::ProjectSession* project = document_->project();
  project->close();
  // Opening read-write checks the file and migrates an older version (quick); the contents are
  // read in the background.
  if (!project->open(file, &error)) {
    QMessageBox::warning(this, tr("Cannot open project"),
                         tr("Cannot open %1:\n\n%2").arg(file, error));
    return;
  }
  statusBar()->showMessage(tr("Opening project %1…").arg(file));
  projectLoader_.setFuture(
      QtConcurrent::run([file] { return views::ProjectSession::readContents(file); }));
  updateActivity();
}

void MainWindow::onProjectLoaded() {
  const views::ProjectContents contents = projectLoader_.result();
  updateActivity();
  if (contents.file != document_->project()->file()) return;  // closed or replaced meanwhile
  if (!contents.error.isEmpty()) {
    QMessageBox::warning(this, tr("Cannot open project"),
                         tr("Cannot read %1:\n\n%2").arg(contents.file, contents.error));
    document_->project()->close();
    return;
  }
  showProjectContents(contents);
  statusBar()->showMessage(tr("Opened project %1").arg(contents.file), 5000);
}

void MainWindow::showProjectContents(const views::ProjectContents& contents) {
  addRecent(QFileInfo(contents.file).absoluteFilePath());
  if (!contents.model || !contents.machine) {
    statusBar()->showMessage(
        tr("The project is empty: searches and runs of this session are recorded there"), 8000);
    return;
  }
  document_->setMachine(contents.machine, QString::fromStdString(contents.machine->name),
                        MachineSelection{});
  machineBar_->showMachine(QString::fromStdString(contents.machine->name), *contents.machine,
                           MachineSelection{});
  machineLabel_->setText(tr("Machine: %1 (from the project)").arg(document_->machineDescription()));
  LoadedModel loaded;
  loaded.graph = contents.model;
  loaded.spec = contents.modelSource.isEmpty() ? QString::fromStdString(contents.model->name)
                                               : contents.modelSource;
  loadingSpec_ = loaded.spec;
  showLoaded(loaded);
  for (const auto& [mode, plan] : contents.plans) document_->setPlan(mode, plan);
  search_->setDecisions(contents.pins, contents.vetoes);
  // The project, not the model, is what reopens next time.
  addRecent(QFileInfo(contents.file).absoluteFilePath());
}

bool MainWindow::saveProjectAs(const QString& file, QString* error) {
  if (QFileInfo::exists(file)) {
    if (error) *error = tr("%1 exists already").arg(file);
    return false;
  }
  views::ProjectSession* project = document_->project();
  project->close();
  if (!project->create(file, error)) return false;
  const auto model = document_->model();
  const auto machine = document_->machine();
  if (model && machine) {
    std::vector<std::shared_ptr<const Plan>> plans;
    for (const QString& mode : document_->planModes()) plans.push_back(document_->plan(mode));
    views::SubstitutionModel* table = search_->substitutions();
    if (!project->store(*model, document_->modelSpec(), *machine, plans, table->pins(),
                        table->vetoes(), error))
      return false;
  }
  addRecent(QFileInfo(file).absoluteFilePath());
  return true;
}

void MainWindow::openProjectDialog() {
  QSettings settings;
  const QString path = QFileDialog::getOpenFileName(
      this, tr("Open Project"),
      rememberSettings_ ? settings.value(kLastProjectDirKey).toString() : QString(),
      kProjectFilter);
  if (path.isEmpty()) return;
  if (rememberSettings_) settings.setValue(kLastProjectDirKey, QFileInfo(path).absolutePath());
  openProject(path);
}

void MainWindow::saveProjectDialog() {
  QSettings settings;
  QString path = QFileDialog::getSaveFileName(
      this, tr("Save Project As"),
      rememberSettings_ ? settings.value(kLastProjectDirKey).toString() : QString(),
      kProjectFilter);
  if (path.isEmpty()) return;
  if (QFileInfo(path).suffix().isEmpty()) path += QStringLiteral(".unity");
  if (rememberSettings_) settings.setValue(kLastProjectDirKey, QFileInfo(path).absolutePath());
  // The dialog asked before replacing a file; a project is never overwritten in place.
  document_->project()->close();
  if (QFileInfo::exists(path) && !QFile::remove(path)) {
    QMessageBox::warning(this, tr("Cannot save project"), tr("Cannot replace %1").arg(path));
    return;
  }
  QString error;
  if (!saveProjectAs(path, &error)) {
    QMessageBox::warning(this, tr("Cannot save project"),
                         tr("Cannot save %1:\n\n%2").arg(path, error));
    return;
  }
  statusBar()->showMessage(
      tr("Saved %1: searches and runs are recorded there from now on").arg(path), 8000);
}

void MainWindow::closeProject() { document_->project()->close(); }

bool MainWindow::startRun() {
  tabs_->setCurrentWidget(run_);
  return run_->startRun();
}

}  // namespace unity::explorer
