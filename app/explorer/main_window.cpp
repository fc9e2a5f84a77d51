#include "main_window.h"

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QCloseEvent>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QSettings>
#include <QStatusBar>
#include <QTabWidget>
#include <QTimer>
#include <QToolBar>
#include <QtConcurrent/QtConcurrentRun>

#include <exception>

#include "about_text.h"
#include "machine_bar.h"
#include "unity/core/errors.h"
#include "unity/core/json_io.h"
#include "unity/core/pcg/training_loss.h"
#include "unity/core/plan/plan.h"
#include "unity/core/plan/plan_optimizer.h"
#include "unity/core/zoo/model_zoo.h"
#include "unity/use_cases/calibrate.h"
#include "unity/use_cases/cpu_probe.h"
#include "unity/views/compare_view.h"
#include "unity/views/display_format.h"
#include "unity/views/explorer_document.h"
#include "unity/views/graph_view.h"
#include "unity/views/layout_request_panel.h"
#include "unity/views/layout_service.h"
#include "unity/views/memory_view.h"
#include "unity/views/model_summary_view.h"
#include "unity/views/pcg_view.h"
#include "unity/views/pipeline_timeline_chart.h"
#include "unity/views/project_session.h"
#include "unity/views/run_view.h"
#include "unity/views/search_runner.h"
#include "unity/views/search_view.h"
#include "unity/views/timeline_view.h"
#include "unity/views/topology_view.h"

namespace unity::explorer {

namespace {
constexpr int kMaxRecent = 8;
constexpr auto kRecentKey = "recentModels";
constexpr auto kLastDirKey = "lastModelDirectory";
constexpr auto kLastModelKey = "lastModel";
constexpr int kActivityRefreshMs = 250;

// Model files the explorer opens by drag and drop or the file dialog.
bool isModelFile(const QString& path) {
  const QString suffix = QFileInfo(path).suffix().toLower();
  return suffix == QLatin1String("onnx") || suffix == QLatin1String("json") ||
         suffix == QLatin1String("unity");
}

QString errorText(const std::exception& e, bool input) {
  return input ? QString::fromUtf8(e.what())
               : QObject::tr("internal error: %1").arg(QString::fromUtf8(e.what()));
}
}  // namespace

QStringList MainWindow::viewNames() {
  return {QStringLiteral("summary"),  QStringLiteral("pcg"),     QStringLiteral("topology"),
          QStringLiteral("search"),   QStringLiteral("compare"), QStringLiteral("run"),
          QStringLiteral("timeline"), QStringLiteral("memory")};
}

MainWindow::MainWindow(bool rememberSettings, QWidget* parent)
    : QMainWindow(parent),
      rememberSettings_(rememberSettings),
      settings_(rememberSettings ? ExplorerSettings::load() : ExplorerSettings()),
      document_(new views::ExplorerDocument(this)),
      tabs_(new QTabWidget(this)),
      summary_(new views::ModelSummaryView(this)),
      pcg_(new views::PcgView(document_, this)),
      topology_(new views::TopologyView(document_, this)),
      search_(new views::SearchView(document_, this)),
      compare_(new views::CompareView(document_, this)),
      run_(new views::RunView(document_, this)),
      timeline_(new views::TimelineView(document_, this)),
      memory_(new views::MemoryView(document_, this)),
      dataParallel_(new views::SearchRunner(this)),
      machineBar_(new MachineBar(this)),
      activity_(new QLabel(this)),
      machineLabel_(new QLabel(this)),
      projectLabel_(new QLabel(this)),
      activityTimer_(new QTimer(this)) {
  views::LayoutService::shared()->setProcessThreshold(settings_.dotProcessAbove);
  search_->setBudget(settings_.searchBudget);
  search_->setAlpha(settings_.searchAlpha);
  compare_->setBudget(settings_.searchBudget);
  run_->setBudget(settings_.searchBudget);

  tabs_->setDocumentMode(true);
  tabs_->addTab(summary_, tr("Summary"));
  tabs_->addTab(pcg_, tr("PCG"));
  tabs_->addTab(topology_, tr("Topology"));
  tabs_->addTab(search_, tr("Search"));
  tabs_->addTab(compare_, tr("Compare"));
  tabs_->addTab(run_, tr("Run"));
  tabs_->addTab(timeline_, tr("Timeline"));
  tabs_->addTab(memory_, tr("Memory"));
  setCentralWidget(tabs_);
  setWindowTitle(tr("Unity Explorer"));
  setAcceptDrops(true);
  createToolBar();
  createMenus();
  activity_->setObjectName(QStringLiteral("activity"));
  machineLabel_->setObjectName(QStringLiteral("machineLabel"));
  projectLabel_->setObjectName(QStringLiteral("projectLabel"));
  statusBar()->addPermanentWidget(activity_);
  statusBar()->addPermanentWidget(projectLabel_);
  statusBar()->addPermanentWidget(machineLabel_);
  machineLabel_->setText(tr("No machine selected"));
  statusBar()->showMessage(tr("Ready"));

  connect(&loader_, &QFutureWatcher<LoadedModel>::finished, this, &MainWindow::onModelLoaded);
  connect(dataParallel_, &views::SearchRunner::finished, this,
          [this](std::shared_ptr<const Plan> plan) {
            // A late plan for an older model or machine is dropped.
            const auto model = document_->model();
            if (model && plan->summary.model == model->name && plan->summary.devices == devices())
              document_->setPlan(QStringLiteral("data-parallel"), plan);
          });
  connect(dataParallel_, &views::SearchRunner::failed, this, [this](const QString& message) {
    statusBar()->showMessage(tr("No data-parallel plan: %1").arg(message));
  });
  connect(document_, &views::ExplorerDocument::planChanged, this, [this](const QString& mode) {
    if (mode.isEmpty()) return;
    const auto& s = document_->plan(mode)->summary;
    statusBar()->showMessage(
        tr("%1 plan: %2 per iteration")
            .arg(views::ExplorerDocument::modeTitle(mode), views::formatMs(s.iteration_time_ms)),
        8000);
  });
  activityTimer_->setInterval(kActivityRefreshMs);
  connect(activityTimer_, &QTimer::timeout, this, &MainWindow::updateActivity);
  activityTimer_->start();
  // Start and end of work show at once; progress in between on the timer.
  for (views::SearchRunner* r : {search_->runner(), dataParallel_})
    connect(r, &views::SearchRunner::stateChanged, this, &MainWindow::updateActivity);
  connect(&loader_, &QFutureWatcher<LoadedModel>::finished, this, &MainWindow::updateActivity);
  connect(pcg_, &views::PcgView::busyChanged, this, &MainWindow::updateActivity);
  connect(compare_, &views::CompareView::busyChanged, this, &MainWindow::updateActivity);
  connect(run_, &views::RunView::busyChanged, this, &MainWindow::updateActivity);
  connect(timeline_, &views::TimelineView::busyChanged, this, &MainWindow::updateActivity);
  connect(&projectLoader_, &QFutureWatcher<views::ProjectContents>::finished, this,
          &MainWindow::onProjectLoaded);
  connect(document_->project(), &views::ProjectSession::opened, this,
          &MainWindow::updateProjectLabel);
  connect(document_->project(), &views::ProjectSession::closed, this,
          &MainWindow::updateProjectLabel);
  updateProjectLabel();
}

MainWindow::~MainWindow() {
  loader_.waitForFinished();
  projectLoader_.waitForFinished();
}

void MainWindow::createToolBar() {
  QToolBar* bar = addToolBar(tr("Model and Machine"));
  bar->setObjectName(QStringLiteral("modelMachineBar"));
  bar->setMovable(false);
  bar->addWidget(machineBar_);
  connect(machineBar_, &MachineBar::modelRequested, this, &MainWindow::openModel);
  connect(machineBar_, &MachineBar::openModelFileRequested, this, &MainWindow::openModelDialog);
  connect(machineBar_, &MachineBar::machineRequested, this, &MainWindow::selectMachine);
  connect(machineBar_, &MachineBar::openMachineFileRequested, this, &MainWindow::openMachineDialog);
}

void MainWindow::createMenus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  QAction* open = file->addAction(tr("&Open Model…"), this, &MainWindow::openModelDialog);
  open->setShortcut(QKeySequence::Open);
  open->setStatusTip(
      tr("Open an ONNX file or a Unity model JSON file (or drop one on the window)"));
  QMenu* zoo = file->addMenu(tr("Open &Zoo Model"));
  for (const zoo::ModelInfo& m : zoo::models()) {
    const QString name = QString::fromStdString(m.name);
    QAction* a = zoo->addAction(name, this, [this, name] { openModel(name); });
    a->setStatusTip(tr("%1 (batch %2 per device)")
                        .arg(QString::fromStdString(m.description))
                        .arg(m.default_batch));
  }
  recentMenu_ = file->addMenu(tr("Open &Recent"));
  rebuildRecentMenu();
  createProjectMenu(file);
  file->addAction(tr("Open &Machine File…"), this, &MainWindow::openMachineDialog)
      ->setStatusTip(tr("Target a machine described by a topology JSON file"));
  file->addSeparator();
  QAction* exportGraph = file->addAction(tr("&Export Graph…"), this, [this] {
    if (tabs_->currentWidget() == timeline_)  // the timeline: PNG, SVG or a Chrome trace
      timeline_->predictedChart()->exportWithDialog();
    else if (views::GraphView* v = currentGraphView())
      v->exportWithDialog();
  });
  exportGraph->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_E));
  exportGraph->setStatusTip(
      tr("Save the graph of the current view as PNG (full resolution) or SVG"));
  file->addAction(tr("Export &Launch…"), this, &MainWindow::exportLaunchDialog)
      ->setStatusTip(tr("Write the shown plan's launch for Megatron-LM, torchtitan or DeepSpeed"));
  file->addSeparator();
  QAction* prefs = file->addAction(tr("&Settings…"), this, &MainWindow::showSettings);
  prefs->setShortcut(QKeySequence::Preferences);
  prefs->setMenuRole(QAction::PreferencesRole);
  file->addSeparator();
  QAction* quit = file->addAction(tr("&Quit"), qApp, &QApplication::quit);
  quit->setShortcut(
      QKeySequence(Qt::CTRL | Qt::Key_Q));  // QKeySequence::Quit is empty on some desktops
  quit->setMenuRole(QAction::QuitRole);

  QMenu* view = menuBar()->addMenu(tr("&View"));
  auto* group = new QActionGroup(this);
  for (int i = 0; i < tabs_->count(); ++i) {
    QAction* a = view->addAction(tabs_->tabText(i));
    a->setCheckable(true);
    a->setChecked(i == tabs_->currentIndex());
    a->setShortcut(QKeySequence(Qt::CTRL | Qt::Key(Qt::Key_1 + i)));
    group->addAction(a);
    connect(a, &QAction::triggered, this, [this, i] { tabs_->setCurrentIndex(i); });
    connect(tabs_, &QTabWidget::currentChanged, a,
            [a, i](int current) { a->setChecked(current == i); });
  }
  view->addSeparator();
  QAction* find = view->addAction(tr("&Find Operator…"), this, [this] {
    if (views::GraphView* v = currentGraphView()) v->focusFind();
  });
  find->setShortcut(QKeySequence::Find);
  view->addAction(tr("&Reload Model"), this, &MainWindow::reloadModel)
      ->setShortcut(QKeySequence::Refresh);
  QAction* statusBarToggle = view->addAction(tr("Status &Bar"));
  statusBarToggle->setCheckable(true);
  statusBarToggle->setChecked(true);
  connect(statusBarToggle, &QAction::toggled, statusBar(), &QWidget::setVisible);

  QMenu* searchMenu = menuBar()->addMenu(tr("&Search"));
  QAction* run = searchMenu->addAction(tr("&Run Search"), this, [this] {
    tabs_->setCurrentWidget(search_);
    search_->startSearch();
  });
  run->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_R));
  run->setStatusTip(tr("Search the open model on the machine, honouring the pins and vetoes"));
  QAction* pause = searchMenu->addAction(tr("&Pause / Resume"), this, [this] {
    if (search_->runner()->state() == views::SearchRunner::State::Paused)
      search_->runner()->resume();
    else
      search_->runner()->pause();
  });
  pause->setShortcut(QKeySequence(Qt::Key_F8));
  searchMenu->addAction(tr("S&tep"), search_->runner(), &views::SearchRunner::step)
      ->setShortcut(QKeySequence(Qt::Key_F10));
  searchMenu->addAction(tr("&Cancel"), search_->runner(), &views::SearchRunner::cancel)
      ->setShortcut(QKeySequence(Qt::SHIFT | Qt::Key_F5));

  QMenu* runMenu = menuBar()->addMenu(tr("&Run"));
  QAction* train = runMenu->addAction(tr("&Train Plan"), this, [this] {
    tabs_->setCurrentWidget(run_);
    run_->startRun();
  });
  train->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_T));
  train->setStatusTip(
      tr("Train the run view's plan for real (the executor), recording the run "
         "in the open project"));
  runMenu->addAction(tr("&Stop Run"), run_, &views::RunView::stop)
      ->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_T));

  QMenu* help = menuBar()->addMenu(tr("&Help"));
  QAction* about = help->addAction(tr("&About Unity"), this, &MainWindow::showAbout);
  about->setMenuRole(QAction::AboutRole);
  help->addAction(tr("About &Qt"), qApp, &QApplication::aboutQt)->setMenuRole(QAction::AboutQtRole);
}

int MainWindow::devices() const {
  return document_->machine() ? document_->machine()->num_devices() : 1;
}

QString MainWindow::currentModel() const { return document_->modelSpec(); }

void MainWindow::setLayoutRequest(const LayoutRequest& request) {
  search_->layoutRequest()->setRequest(request);
}

MainWindow::LoadedModel MainWindow::readModel(const QString& spec, int devices) {
  LoadedModel out;
  out.spec = spec;
  // File names go to the core in the local 8-bit encoding so that non-ASCII paths open.
  const std::string path = QFile::encodeName(spec).toStdString();
  try {
    if (spec.endsWith(QLatin1String(".json"), Qt::CaseInsensitive) && QFileInfo::exists(spec)) {
      const nlohmann::json j = read_json_file(path);
      if (is_plan_json(j)) {
        // A plan file: its PCG, the machine it was found for, and the plan itself.
        out.plan = std::make_shared<const Plan>(plan_from_json(j));
        out.graph = std::shared_ptr<const Graph>(out.plan, &out.plan->pcg);
        return out;
      }
    }
    Graph g = load_model_for_devices(path, devices);
    // An inference export trains with the loss the CLI attaches by default, and says so.
    if (const auto attached = attach_loss(g, std::nullopt))
      out.note = QString::fromStdString(describe(*attached, path));
    out.graph = std::make_shared<const Graph>(std::move(g));
  } catch (const InputError& e) {
    out.error = errorText(e, true);
  } catch (const std::exception& e) {
    out.error = errorText(e, false);
  }
  return out;
}

bool MainWindow::loadModel(const QString& spec, QString* error) {
  const LoadedModel loaded = readModel(spec, devices());
  if (!loaded.error.isEmpty()) {
    if (error) *error = loaded.error;
    return false;
  }
  loadingSpec_ = spec;
  showLoaded(loaded);
  return true;
}

void MainWindow::openModel(const QString& spec) {
  loadingSpec_ = spec;
  const int n = devices();
  statusBar()->showMessage(tr("Opening %1…").arg(spec));
  loader_.setFuture(QtConcurrent::run([spec, n] { return readModel(spec, n); }));
  updateActivity();
}

void MainWindow::onModelLoaded() {
  const LoadedModel loaded = loader_.result();
  if (loaded.spec != loadingSpec_) return;  // a later open replaced this one
  if (!loaded.error.isEmpty()) {
    statusBar()->showMessage(tr("Cannot open %1").arg(loaded.spec));
    QMessageBox::warning(this, tr("Cannot open model"),
                         tr("Cannot open %1:\n\n%2").arg(loaded.spec, loaded.error));
    return;
  }
  showLoaded(loaded);
  statusBar()->showMessage(
      loaded.note.isEmpty() ? tr("Opened %1: %2 nodes").arg(loaded.spec).arg(loaded.graph->size())
                            : loaded.note,
      5000);
}

void MainWindow::showLoaded(const LoadedModel& loaded) {
  if (loaded.plan) {
    // The plan's machine comes with it, then the plan itself (a new model drops older plans).
    const auto machine = std::make_shared<const MachineSpec>(loaded.plan->machine);
    // The plan's machine is already cut to its devices: say how many (192 nodes, 4 ranks).
    MachineSelection scope;
    if (machine->num_devices() == machine->num_nodes * machine->devices_per_node)
      scope.nodes = machine->num_nodes;
    else
      scope.devices = machine->num_devices();
    document_->setMachine(machine, loaded.spec, scope);
    machineBar_->showMachine(loaded.spec, *machine, scope);
    machineLabel_->setText(tr("Machine: %1 (from the plan)").arg(document_->machineDescription()));
  }
  document_->setModel(loaded.graph, loaded.spec);
  summary_->setGraph(*loaded.graph, devices());
  machineBar_->showModel(loaded.spec);
  addRecent(QFileInfo::exists(loaded.spec) ? QFileInfo(loaded.spec).absoluteFilePath()
                                           : loaded.spec);
  updateTitle();
  if (loaded.plan) {
    const QString mode = QString::fromStdString(loaded.plan->summary.mode);
    document_->setPlan(mode.isEmpty() ? QStringLiteral("joint") : mode, loaded.plan);
    // The views show the opened plan first, not the faster data-parallel one computed beside it.
    document_->setPreferredMode(mode.isEmpty() ? QStringLiteral("joint") : mode);
    if (mode != QLatin1String("data-parallel")) computeDataParallelPlan();
  } else {
    computeDataParallelPlan();
  }
}

bool MainWindow::loadMachine(const QString& spec, const MachineSelection& selection,
                             QString* error) {
  std::shared_ptr<const MachineSpec> machine;
  try {
    // cpu-local with this computer's figures (probed once and kept), as `unity optimize` plans.
    machine = std::make_shared<const MachineSpec>(
        use_cases::machine_for(nullptr, QFile::encodeName(spec).toStdString(), selection));
  } catch (const InputError& e) {
    if (error) *error = errorText(e, true);
    return false;
  } catch (const std::exception& e) {
    if (error) *error = errorText(e, false);
    return false;
  }
  document_->setMachine(machine, spec, selection);
  machineBar_->showMachine(spec, *machine, selection);
  machineLabel_->setText(tr("Machine: %1").arg(document_->machineDescription()));
  const std::string figures = use_cases::describe_cpu_figures(*machine);
  machineLabel_->setToolTip(QString::fromStdString(
      figures.empty() ? machine->description : machine->description + "\n" + figures));
  return true;
}

void MainWindow::selectMachine(const QString& spec, const MachineSelection& selection) {
  QString error;
  if (!loadMachine(spec, selection, &error)) {
    QMessageBox::warning(this, tr("Cannot use machine"),
                         tr("Cannot use %1:\n\n%2").arg(spec, error));
    if (document_->machine())
      machineBar_->showMachine(document_->machineSpec(), *document_->machine(),
                               document_->machineSelection());
    return;
  }
  if (rememberSettings_ && !QFileInfo::exists(spec)) {
    settings_.machine = spec;
    settings_.save();
  }
  // Zoo models carry the per-device batch times the device count: rebuild for the new machine.
  if (!document_->modelSpec().isEmpty()) openModel(document_->modelSpec());
}

bool MainWindow::showView(const QString& name) {
  const int index = int(viewNames().indexOf(name));
  if (index < 0) return false;
  tabs_->setCurrentIndex(index);
  return true;
}

QString MainWindow::currentView() const { return viewNames().value(tabs_->currentIndex()); }

bool MainWindow::setCompareModes(const QString& left, const QString& right) {
  const QStringList& modes = views::ExplorerDocument::modes();
  if (!modes.contains(left) || !modes.contains(right)) return false;
  compare_->setModes(left, right);
  return true;
}

void MainWindow::computeDataParallelPlan() {
  const auto model = document_->model();
  const auto machine = document_->machine();
  if (!model || !machine) return;
  if (dataParallel_->isActive()) {
    // Finish the old one first; its plan is dropped because the model or machine no longer match.
    connect(dataParallel_, &views::SearchRunner::stateChanged, this,
            [this](views::SearchRunner::State s) {
              if (s == views::SearchRunner::State::Finished ||
                  s == views::SearchRunner::State::Failed) {
                disconnect(dataParallel_, &views::SearchRunner::stateChanged, this, nullptr);
                QTimer::singleShot(0, this, &MainWindow::computeDataParallelPlan);
              }
            });
    return;
  }
  OptimizeOptions options;
  options.mode = "data-parallel";
  dataParallel_->start(model, machine, options);
}

void MainWindow::prepareScreenshot(const QString& view) {
  if (view == QLatin1String("compare")) {
    compare_->computeMissingPlans();
    return;
  }
  if (view == QLatin1String("summary")) return;
  // Show the best plan: search unless one was opened from a plan file (the search view always
  // runs).
  bool searched = false;
  for (const QString& mode : document_->planModes())
    searched = searched || mode != QLatin1String("data-parallel");
  if (view == QLatin1String("search") || !searched) search_->startSearch();
}

QString MainWindow::selectHeaviestOperator() {
  const QString mode = document_->bestMode();
  if (mode.isEmpty()) return {};
  const auto plan = document_->plan(mode);
  // The operator that communicates most shows the most (devices, links, costs); without any
  // communication, the one that takes longest.
  const auto key = [](const OpCost& c) {
    return std::pair(c.own.communication + c.edges.communication, c.own.time() + c.edges.time());
  };
  const OpCost* heaviest = nullptr;
  for (const OpCost& c : plan->mapping.per_op)
    if (!heaviest || key(c) > key(*heaviest)) heaviest = &c;
  if (!heaviest) return {};
  const QString name = QString::fromStdString(plan->pcg.node(heaviest->node).op.name);
  document_->setSelectedName(name);
  return name;
}

bool MainWindow::busy() const {
  return loader_.isRunning() || projectLoader_.isRunning() || dataParallel_->isActive() ||
         pcg_->busy() || search_->busy() || compare_->busy() || run_->busy() || timeline_->busy() ||
         !search_->matchCountsReady();
}

QString MainWindow::activityText() const { return activity_->text(); }

void MainWindow::updateActivity() {
  QString text;
  const views::SearchRunner* runner = search_->runner();
  if (loader_.isRunning())
    text = tr("Opening %1…").arg(loadingSpec_);
  else if (runner->isActive())
    text = tr("Search %1: %2 candidates, best %3")
               .arg(views::SearchRunner::stateName(runner->state()))
               .arg(runner->snapshot().candidates)
               .arg(views::formatMs(runner->snapshot().bestMs));
  else if (projectLoader_.isRunning())
    text = tr("Opening the project…");
  else if (run_->busy())
    text = tr("Training: %1").arg(run_->runner()->iterations().size()) + tr(" iterations done");
  else if (dataParallel_->isActive())
    text = tr("Computing the data-parallel plan…");
  else if (compare_->busy())
    text = tr("Computing plans to compare…");
  else if (pcg_->busy())
    text = tr("Laying out the graph…");
  activity_->setText(text);
}

void MainWindow::updateTitle() {
  const QString spec = document_->modelSpec();
  const QFileInfo info(spec);
  const QString shown = info.exists() ? info.fileName() : spec;
  const QString project = document_->project()->isOpen()
                              ? QFileInfo(document_->project()->file()).fileName()
                              : QString();
  QStringList parts;
  if (!spec.isEmpty()) parts << shown;
  if (!project.isEmpty()) parts << project;
  parts << tr("Unity Explorer");
  setWindowTitle(parts.join(QStringLiteral(" — ")));
  setWindowFilePath(info.exists() ? info.absoluteFilePath() : QString());
}

views::GraphView* MainWindow::currentGraphView() const {
  QWidget* w = tabs_->currentWidget();
  if (w == pcg_) return pcg_->graphView();
  if (w == search_) return search_->graphView();
  if (w == compare_) return compare_->leftView();
  return nullptr;
}

void MainWindow::openModelDialog() {
  QSettings settings;
  const QString path = QFileDialog::getOpenFileName(
      this, tr("Open Model"),
      rememberSettings_ ? settings.value(kLastDirKey).toString() : QString(),
      tr("Models (*.onnx *.json);;ONNX models (*.onnx);;Unity model JSON (*.json);;"
         "Hugging Face config (config.json);;All files (*)"));
  if (path.isEmpty()) {
    machineBar_->showModel(document_->modelSpec());
    return;
  }
  if (rememberSettings_) settings.setValue(kLastDirKey, QFileInfo(path).absolutePath());
  openModel(path);
}

void MainWindow::openMachineDialog() {
  const QString path = QFileDialog::getOpenFileName(this, tr("Open Machine"), QString(),
                                                    tr("Machine topology (*.json);;All files (*)"));
  if (path.isEmpty()) {
    if (document_->machine())
      machineBar_->showMachine(document_->machineSpec(), *document_->machine(),
                               document_->machineSelection());
    return;
  }
  selectMachine(path, MachineSelection{});
}

void MainWindow::reloadModel() {
  if (!document_->modelSpec().isEmpty()) openModel(document_->modelSpec());
}

void MainWindow::showSettings() {
  SettingsDialog dialog(settings_, this);
  if (dialog.exec() != QDialog::Accepted) return;
  settings_ = dialog.settings();
  if (rememberSettings_) settings_.save();
  views::LayoutService::shared()->setProcessThreshold(settings_.dotProcessAbove);
  search_->setBudget(settings_.searchBudget);
  search_->setAlpha(settings_.searchAlpha);
  compare_->setBudget(settings_.searchBudget);
  run_->setBudget(settings_.searchBudget);
}

void MainWindow::showAbout() {
  QGuiApplication::setOverrideCursor(Qt::WaitCursor);  // probing the CUDA driver can take a moment
  const QString text = aboutText();
  QGuiApplication::restoreOverrideCursor();
  QMessageBox::about(this, tr("About Unity"), text);
}

void MainWindow::addRecent(const QString& spec) {
  if (!rememberSettings_) return;
  QSettings settings;
  QStringList recent = settings.value(kRecentKey).toStringList();
  recent.removeAll(spec);
  recent.prepend(spec);
  while (recent.size() > kMaxRecent) recent.removeLast();
  settings.setValue(kRecentKey, recent);
  settings.setValue(kLastModelKey, spec);
  rebuildRecentMenu();
}

void MainWindow::rebuildRecentMenu() {
  recentMenu_->clear();
  const QStringList recent =
      rememberSettings_ ? QSettings().value(kRecentKey).toStringList() : QStringList();
  for (const QString& spec : recent)
    recentMenu_->addAction(spec, this, [this, spec] { openRecent(spec); });
  recentMenu_->setEnabled(!recent.isEmpty());
  if (recent.isEmpty()) return;
  recentMenu_->addSeparator();
  recentMenu_->addAction(tr("&Clear Recent"), this, [this] {
    QSettings().remove(kRecentKey);
    rebuildRecentMenu();
  });
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
  for (const QUrl& url : event->mimeData()->urls())
    if (url.isLocalFile() && isModelFile(url.toLocalFile())) {
      event->acceptProposedAction();
      return;
    }
}

void MainWindow::dropEvent(QDropEvent* event) {
  for (const QUrl& url : event->mimeData()->urls())
    if (url.isLocalFile() && isModelFile(url.toLocalFile())) {
      event->acceptProposedAction();
      openRecent(url.toLocalFile());
      return;
    }
}

void MainWindow::closeEvent(QCloseEvent* event) {
  // Searches stop with the window: their threads must not outlive the document they report to.
  search_->runner()->cancel();
  run_->stop();
  QMainWindow::closeEvent(event);
}

}  // namespace unity::explorer
