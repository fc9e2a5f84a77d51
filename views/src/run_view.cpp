#include "unity/views/run_view.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QTableWidget>
#include <QThread>
#include <QVBoxLayout>

#include <algorithm>
#include <map>

#include "run_chart.h"
#include "table_style.h"
#include "unity/core/errors.h"
#include "unity/core/zoo/scaled_zoo.h"
#include "unity/executor/backends.h"
#include "unity/use_cases/operator_times.h"
#include "unity/use_cases/run_model.h"
#include "unity/views/display_format.h"
#include "unity/views/explorer_document.h"
#include "unity/views/operator_times_panel.h"
#include "unity/views/pipeline_plan_panel.h"
#include "unity/views/project_session.h"
#include "unity/views/search_runner.h"

namespace unity::views {

namespace {
// Above this much memory for all devices together, a run of a scalable zoo model starts reduced.
constexpr double kReduceAboveBytes = 2.0 * (1ull << 30);
constexpr double kDefaultScale = 0.125;
constexpr int kDefaultBatchPerDevice = 2;

bool isScalable(const QString& spec) {
  const auto& names = zoo::scalable_models();
  return std::find(names.begin(), names.end(), spec.toStdString()) != names.end();
}

QString number(const nlohmann::json& j, const char* key, int precision = 3) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number()) return {};
  return QString::number(j[key].get<double>(), 'g', precision);
}
}  // namespace

RunView::RunView(ExplorerDocument* document, QWidget* parent)
    : QWidget(parent),
      document_(document),
      runner_(new RunRunner(this)),
      planner_(new SearchRunner(this)),
      chart_(new RunChart(this)),
      pipeline_(new PipelinePlanPanel(Qt::Horizontal, /*measuredRow=*/true, this)),
      operators_(new OperatorTimesPanel(this)),
      plan_(new QComboBox(this)),
      backend_(new QComboBox(this)),
      ranks_(new QSpinBox(this)),
      iterations_(new QSpinBox(this)),
      warmup_(new QSpinBox(this)),
      reduce_(new QCheckBox(tr("Reduce for CPU:"), this)),
      profile_(new QCheckBox(tr("Profile operators"), this)),
      scale_(new QDoubleSpinBox(this)),
      batch_(new QSpinBox(this)),
      run_(new QPushButton(tr("Run"), this)),
      stop_(new QPushButton(tr("Stop"), this)),
      planLabel_(new QLabel(this)),
      status_(new QLabel(this)),
      result_(new QLabel(this)),
      runs_(new QTableWidget(this)) {
  setObjectName(QStringLiteral("runView"));
  run_->setObjectName(QStringLiteral("run"));
  stop_->setObjectName(QStringLiteral("stop"));
  plan_->setToolTip(tr("The plan to train"));
  plan_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  connect(plan_, &QComboBox::activated, this, [this] { planChosen_ = true; });
  for (const auto& b : executor::available_backends()) {
    backend_->addItem(QString::fromStdString(b.name), QString::fromStdString(b.name));
    const int i = backend_->count() - 1;
    backend_->setItemData(i, QString::fromStdString(b.detail), Qt::ToolTipRole);
    if (!b.available)
      backend_->setItemData(i, 0, Qt::UserRole - 1);  // disabled: the tooltip says why
  }
  ranks_->setRange(1, 1);
  ranks_->setToolTip(tr("Processes; device d of the plan runs on rank d mod ranks"));
  iterations_->setRange(1, 100000);
  iterations_->setValue(20);
  iterations_->setToolTip(tr("Measured iterations"));
  warmup_->setRange(0, 1000);
  warmup_->setValue(1);
  warmup_->setToolTip(tr("Unmeasured iterations first"));
  scale_->setRange(0.01, 1.0);
  scale_->setDecimals(3);
  scale_->setSingleStep(0.025);
  scale_->setValue(kDefaultScale);
  scale_->setPrefix(tr("scale "));
  scale_->setToolTip(tr("Widths, image size, tables and depth of the zoo model times this"));
  batch_->setRange(1, 4096);
  batch_->setValue(kDefaultBatchPerDevice);
  batch_->setPrefix(tr("batch "));
  batch_->setSuffix(tr(" / device"));
  reduce_->setToolTip(
      tr("Rebuild the zoo model smaller, plan it again in the same mode on the same machine, and "
         "run that plan"));
  connect(reduce_, &QCheckBox::toggled, this, [this] {
    reduceTouched_ = true;
    updateButtons();
  });
  profile_->setObjectName(QStringLiteral("profileOperators"));
  profile_->setToolTip(
      tr("Time every operator (a little slower): the run then shows each operator's predicted and "
         "measured time, and with a project open the times are kept there and cost the next "
         "plans"));
  stop_->setToolTip(tr("One rank stops at once; mpirun runs after the iteration in flight"));
  status_->setObjectName(QStringLiteral("runStatus"));
  status_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  planLabel_->setObjectName(QStringLiteral("runPlan"));
  planLabel_->setWordWrap(true);
  planLabel_->setTextFormat(Qt::RichText);
  result_->setObjectName(QStringLiteral("runResult"));
  result_->setWordWrap(true);
  result_->setTextFormat(Qt::RichText);
  result_->setTextInteractionFlags(Qt::TextSelectableByMouse);

  // Two rows: what runs (the plan, reduced or not), then how (backend, ranks, iterations).
  auto* what = new QHBoxLayout;
  what->setContentsMargins(6, 4, 6, 0);
  what->addWidget(new QLabel(tr("Plan:"), this));
  what->addWidget(plan_);
  what->addSpacing(8);
  what->addWidget(reduce_);
  what->addWidget(scale_);
  what->addWidget(batch_);
  what->addStretch(1);
  auto* how = new QHBoxLayout;
  how->setContentsMargins(6, 2, 6, 0);
  how->addWidget(new QLabel(tr("Backend:"), this));
  how->addWidget(backend_);
  how->addWidget(new QLabel(tr("Ranks:"), this));
  how->addWidget(ranks_);
  how->addWidget(new QLabel(tr("Iterations:"), this));
  how->addWidget(iterations_);
  how->addWidget(new QLabel(tr("Warm-up:"), this));
  how->addWidget(warmup_);
  how->addWidget(profile_);
  how->addSpacing(8);
  how->addWidget(run_);
  how->addWidget(stop_);
  how->addSpacing(8);
  how->addWidget(status_, 1);

  const QStringList headers{tr("Run"),     tr("Model"),       tr("Plan"),
                            tr("Backend"), tr("Ranks"),       tr("Iter."),
                            tr("Status"),  tr("Measured ms"), tr("Predicted ms (CPU)"),
                            tr("Started")};
  runs_->setColumnCount(int(headers.size()));
  runs_->setHorizontalHeaderLabels(headers);
  runs_->setObjectName(QStringLiteral("recordedRuns"));
  applyReadOnlyTableStyle(runs_);
  runs_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  runs_->setSelectionBehavior(QAbstractItemView::SelectRows);
  runs_->setSelectionMode(QAbstractItemView::SingleSelection);
  runs_->horizontalHeader()->setStretchLastSection(true);
  connect(runs_, &QTableWidget::cellClicked, this, [this](int row, int) { showRecordedRun(row); });

  auto* runsPane = new QWidget(this);
  auto* runsLayout = new QVBoxLayout(runsPane);
  runsLayout->setContentsMargins(6, 0, 6, 0);
  runsLayout->setSpacing(2);
  auto* runsTitle = new QLabel(this);
  runsTitle->setObjectName(QStringLiteral("runsTitle"));
  runsLayout->addWidget(runsTitle);
  runsLayout->addWidget(runs_, 1);

  auto* upper = new QWidget(this);
  auto* upperLayout = new QVBoxLayout(upper);
  upperLayout->setContentsMargins(6, 0, 6, 0);
  upperLayout->addWidget(planLabel_);
  upperLayout->addWidget(chart_, 1);
  upperLayout->addWidget(result_);
  upperLayout->addWidget(pipeline_, 2);
  upperLayout->addWidget(operators_, 2);
  pipeline_->hide();
  operators_->hide();
  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(upper);
  split->addWidget(runsPane);
  split->setSizes({560, 170});

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addLayout(what);
  layout->addLayout(how);
  layout->addWidget(split, 1);

  connect(run_, &QPushButton::clicked, this, [this] { startRun(); });
  connect(stop_, &QPushButton::clicked, this, &RunView::stop);
  connect(plan_, &QComboBox::currentIndexChanged, this, [this] { refreshPlanText(); });
  connect(runner_, &RunRunner::predicted, this, &RunView::onPredicted);
  connect(runner_, &RunRunner::iterationsDone, this, [this](const QList<RunIteration>& fresh) {
    chart_->addIterations(fresh);
    const RunIteration& last = fresh.last();
    const int total = runner_->settings().iterations + runner_->settings().warmup;
    status_->setText(tr("Running: iteration %1/%2%3 · loss %4 · %5")
                         .arg(last.index + 1)
                         .arg(total)
                         .arg(last.warmup ? tr(" (warm-up)") : QString())
                         .arg(last.loss, 0, 'f', 5)
                         .arg(formatMs(last.ms)));
  });
  connect(runner_, &RunRunner::finished, this, &RunView::onFinished);
  connect(runner_, &RunRunner::failed, this, [this](const QString& message) {
    status_->setText(
        tr("<span style='color:#d32f2f'>Run failed: %1</span>").arg(message.toHtmlEscaped()));
    if (runner_->outcome().runId > 0) document_->project()->notifyChanged();
    showResult();
    updateButtons();
    emit busyChanged(busy());
  });
  connect(runner_, &RunRunner::stateChanged, this, [this] {
    updateButtons();
    emit busyChanged(busy());
  });
  connect(planner_, &SearchRunner::finished, this, [this](std::shared_ptr<const Plan> plan) {
    if (planGeneration_ == document_->generation()) launch(std::move(plan));
    updateButtons();
  });
  connect(planner_, &SearchRunner::failed, this, [this](const QString& message) {
    status_->setText(tr("<span style='color:#d32f2f'>Cannot plan the reduced model: %1</span>")
                         .arg(message.toHtmlEscaped()));
    updateButtons();
    emit busyChanged(busy());
  });
  connect(document_, &ExplorerDocument::planChanged, this, &RunView::refreshPlans);
  connect(document_, &ExplorerDocument::modelChanged, this, [this] {
    if (planner_->isActive()) planner_->cancel();
    reduceTouched_ = false;
    planChosen_ = false;
    refreshPlans();
  });
  ProjectSession* project = document_->project();
  const auto projectTitle = [this, runsTitle, project] {
    runsTitle->setText(project->isOpen()
                           ? tr("<b>Runs recorded in %1</b> &nbsp;new runs are recorded there; "
                                "click a run to chart it again")
                                 .arg(QFileInfo(project->file()).fileName().toHtmlEscaped())
                           : tr("<b>Recorded runs</b> &nbsp;open or save a project "
                                "(File menu) to keep runs"));
    refreshRuns();
  };
  connect(project, &ProjectSession::opened, this, projectTitle);
  connect(project, &ProjectSession::closed, this, projectTitle);
  connect(project, &ProjectSession::changed, this, &RunView::refreshRuns);
  projectTitle();
  refreshPlans();
}

QString RunView::statusText() const { return status_->text(); }
QString RunView::resultText() const { return result_->text(); }
QString RunView::planText() const { return planLabel_->text(); }
bool RunView::busy() const { return running() || pipeline_->busy(); }

bool RunView::running() const { return runner_->isActive() || planner_->isActive(); }

void RunView::setPlanMode(const QString& mode) {
  const int i = plan_->findData(mode);
  planChosen_ = i >= 0;
  if (i >= 0) plan_->setCurrentIndex(i);
}
void RunView::setRanks(int ranks) { ranks_->setValue(ranks); }
void RunView::setIterations(int iterations, int warmup) {
  iterations_->setValue(iterations);
  warmup_->setValue(warmup);
}
void RunView::setReduced(bool reduced, double scale, int batchPerDevice) {
  reduce_->setChecked(reduced);
  reduceTouched_ = true;
  if (scale > 0) scale_->setValue(scale);
  if (batchPerDevice > 0) batch_->setValue(batchPerDevice);
}
void RunView::setBudget(int budget) { budget_ = budget; }
void RunView::setWorker(const QString& program) { worker_ = program; }

std::shared_ptr<const Plan> RunView::selectedPlan() const {
  const QString mode = plan_->currentData().toString();
  return mode.isEmpty() ? nullptr : document_->plan(mode);
}

void RunView::refreshPlans() {
  const QString previous = plan_->currentData().toString();
  const QSignalBlocker block(plan_);
  plan_->clear();
  for (const QString& mode : document_->planModes()) {
    const auto& s = document_->plan(mode)->summary;
    plan_->addItem(
        tr("%1 · %2").arg(ExplorerDocument::modeTitle(mode), formatMs(s.iteration_time_ms)), mode);
  }
  // The best plan, as the other views show it, unless the user picked one that is still there.
  const QString best = document_->bestMode();
  int index = planChosen_ ? plan_->findData(previous) : -1;
  if (index < 0) index = plan_->findData(best);
  plan_->setCurrentIndex(index);
  refreshPlanText();
}

void RunView::refreshPlanText() {
  const auto plan = selectedPlan();
  // The pipeline pictures follow the plan a run would use until a run starts.
  if (!runner_->isActive()) {
    pipeline_->setPlan(plan);
    pipeline_->setVisible(pipeline_->showsPipeline());
  }
  const bool scalable = isScalable(document_->modelSpec());
  reduce_->setEnabled(scalable);
  if (!plan) {
    planLabel_->setText(document_->model()
                            ? tr("No plan yet: the data-parallel plan is being computed, or run "
                                 "a search in the Search view.")
                            : tr("Open a model to train one of its plans."));
    updateButtons();
    return;
  }
  const auto& s = plan->summary;
  const int devices = std::max(1, s.devices);
  // A pipelined plan runs one rank per device (each rank its stage's chunks); other plans share
  // the machine's cores.
  const int ranks =
      plan->pipeline ? devices : std::min(devices, std::max(1, QThread::idealThreadCount()));
  if (ranks_->maximum() != devices || ranks_->minimum() != (plan->pipeline ? devices : 1)) {
    ranks_->setRange(plan->pipeline ? devices : 1, devices);
    ranks_->setValue(ranks);
  }
  if (!reduceTouched_) {
    const QSignalBlocker block(reduce_);
    reduce_->setChecked(scalable && s.peak_memory_bytes * devices > kReduceAboveBytes);
  }
  planLabel_->setText(
      tr("<b>%1</b> of %2 (batch %3) for %4 devices of %5: predicted %6 per iteration there. "
         "Device <i>d</i> of the plan runs on rank <i>d</i> mod ranks.")
          .arg(ExplorerDocument::modeTitle(plan_->currentData().toString()),
               QString::fromStdString(s.model).toHtmlEscaped())
          .arg(plan->pcg.batch_size)
          .arg(devices)
          .arg(QString::fromStdString(s.machine).toHtmlEscaped(), formatMs(s.iteration_time_ms)));
  updateButtons();
}

void RunView::updateButtons() {
  const bool active = running();
  run_->setEnabled(!active && selectedPlan() != nullptr);
  stop_->setEnabled(runner_->state() == RunRunner::State::Running || planner_->isActive());
  for (QWidget* w : {static_cast<QWidget*>(plan_), static_cast<QWidget*>(backend_),
                     static_cast<QWidget*>(ranks_), static_cast<QWidget*>(iterations_),
                     static_cast<QWidget*>(warmup_), static_cast<QWidget*>(profile_)})
    w->setEnabled(!active);
  const bool scalable = isScalable(document_->modelSpec());
  reduce_->setEnabled(!active && scalable);
  scale_->setEnabled(!active && scalable && reduce_->isChecked());
  batch_->setEnabled(!active && scalable && reduce_->isChecked());
}

RunSettings RunView::settings() const {
  RunSettings s;
  s.backend = backend_->currentData().toString();
  s.ranks = ranks_->value();
  s.iterations = iterations_->value();
  s.warmup = warmup_->value();
  s.worker = worker_;
  s.profile = profile_->isChecked();
  if (document_->project()->isOpen()) s.projectFile = document_->project()->file();
  return s;
}

bool RunView::startRun() {
  const auto plan = selectedPlan();
  if (!plan || running()) {
    status_->setText(plan ? tr("A run is in progress.") : tr("There is no plan to run yet."));
    return false;
  }
  chart_->reset();
  result_->clear();
  runs_->clearSelection();
  operators_->clear();
  operators_->hide();
  if (!(reduce_->isChecked() && reduce_->isEnabled())) {
    launch(plan);
    return runner_->isActive();
  }
  // The reduced model, planned like the chosen plan on its machine.
  const int devices = std::max(1, plan->summary.devices);
  std::shared_ptr<const Graph> reduced;
  try {
    use_cases::RunModel request;
    request.target = document_->modelSpec().toStdString();
    request.devices = devices;
    request.batch = std::int64_t(batch_->value()) * devices;
    request.scale = scale_->value();
    reduced = std::make_shared<const Graph>(use_cases::build_run_model(request));
  } catch (const std::exception& e) {
    status_->setText(tr("<span style='color:#d32f2f'>Cannot reduce the model: %1</span>")
                         .arg(QString::fromUtf8(e.what()).toHtmlEscaped()));
    return false;
  }
  OptimizeOptions options;
  options.mode = plan_->currentData().toString().toStdString();
  options.budget = budget_;
  options.pins = plan->summary.pinned;
  options.vetoes = plan->summary.vetoed;
  // A reduced zoo model (the paper's models, which scale_zoo shrinks) is planned by the PCG search
  // alone; a pipelined plan runs as it is, without reducing.
  options.pipelines = false;
  planGeneration_ = document_->generation();
  const auto machine = std::make_shared<const MachineSpec>(plan->machine);
  if (!planner_->start(reduced, machine, options)) return false;
  status_->setText(tr("Planning %1 (%2) for %3 devices…")
                       .arg(QString::fromStdString(reduced->name), plan_->currentText())
                       .arg(devices));
  updateButtons();
  emit busyChanged(true);
  return true;
}

void RunView::launch(std::shared_ptr<const Plan> plan) {
  runPlan_ = plan;
  predictedMs_ = plan->summary.iteration_time_ms;
  predictedCpuMs_ = 0;
  chart_->reset();
  if (!runner_->start(plan, settings())) {
    status_->setText(tr("<span style='color:#d32f2f'>Cannot run: %1</span>")
                         .arg(runner_->error().toHtmlEscaped()));
    updateButtons();
    emit busyChanged(busy());
    return;
  }
  status_->setText(tr("Starting %1 rank%2 (%3)…")
                       .arg(runner_->settings().ranks)
                       .arg(runner_->settings().ranks == 1 ? "" : "s")
                       .arg(runner_->settings().backend));
}

void RunView::stop() {
  if (planner_->isActive()) planner_->cancel();
  if (runner_->state() != RunRunner::State::Running) return;
  runner_->stop();
  status_->setText(tr("Stopping…"));
}

void RunView::onPredicted(double planMachineMs, double cpuMs) {
  predictedMs_ = planMachineMs;
  predictedCpuMs_ = cpuMs;
  chart_->setPredicted(cpuMs);
}

void RunView::onFinished(const RunOutcome& outcome) {
  if (outcome.pipeline) {
    pipeline_->setPlan(runner_->plan());
    pipeline_->setMeasurement(outcome.pipeline);
    pipeline_->setVisible(true);
    // The timeline and memory views show it beside their prediction too.
    document_->setMeasurement(runner_->plan(), outcome.pipeline);
  }
  const auto& its = outcome.iterations;
  status_->setText(outcome.status == QLatin1String("completed")
                       ? tr("Run completed: %1 iterations").arg(its.size())
                       : tr("Run stopped after %1 iterations").arg(its.size()));
  if (!outcome.profile.empty() && runner_->plan()) {
    operators_->setRows(use_cases::compare_with_run(*runner_->plan(), outcome.profile),
                        QString::fromStdString(runner_->plan()->summary.machine));
    operators_->setVisible(true);
  }
  showResult();
  if (outcome.runId > 0) document_->project()->notifyChanged();
  updateButtons();
  emit busyChanged(busy());
  emit runFinished(outcome);
}

void RunView::showResult() {
  const RunOutcome& o = runner_->outcome();
  const auto plan = runner_->plan();
  if (!plan) return;
  QStringList parts;
  double measured = o.measuredMs;
  if (measured <= 0) {  // stopped: the median of what was measured
    std::vector<double> ms;
    for (const RunIteration& it : o.iterations)
      if (!it.warmup) ms.push_back(it.ms);
    std::sort(ms.begin(), ms.end());
    if (!ms.empty())
      measured =
          ms.size() % 2 ? ms[ms.size() / 2] : (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]) / 2;
  }
  if (measured > 0)
    parts << tr("<b>Measured</b> %1 per iteration (median, slowest rank)").arg(formatMs(measured));
  if (o.predictedCpuMs > 0)
    parts << tr("<b>predicted on this CPU</b> %1%2 %3")
                 .arg(formatMs(o.predictedCpuMs))
                 .arg(measured > 0 ? tr(" (measured / predicted = %1)")
                                         .arg(measured / o.predictedCpuMs, 0, 'f', 2)
                                   : QString())
                 .arg(o.cpuCalibrated
                          ? tr("[calibrated%1]")
                                .arg(o.cpuProfiles > 0
                                         ? tr(", %1 measured operator times").arg(o.cpuProfiles)
                                         : QString())
                          : tr("[%1; <i>unity calibrate --project</i> measures more]")
                                .arg(o.cpuFigures.toHtmlEscaped()));
  parts << tr("<b>predicted on %1</b> %2")
               .arg(QString::fromStdString(plan->summary.machine).toHtmlEscaped(),
                    formatMs(o.predictedMs));
  if (!o.iterations.isEmpty())
    parts << tr("loss %1 → %2")
                 .arg(o.iterations.first().loss, 0, 'f', 4)
                 .arg(o.iterations.last().loss, 0, 'f', 4);
  if (o.setupMs > 0) parts << tr("setup %1").arg(formatMs(o.setupMs));
  QString text = parts.join(QStringLiteral(" · "));
  if (plan != selectedPlan())  // the reduced model's own plan
    text = tr("Ran <b>%1</b> (batch %2), planned %3 for the same %4 devices: ")
               .arg(QString::fromStdString(plan->pcg.name).toHtmlEscaped())
               .arg(plan->pcg.batch_size)
               .arg(ExplorerDocument::modeTitle(QString::fromStdString(plan->summary.mode)))
               .arg(plan->summary.devices) +
           text;
  if (plan->summary.devices > runner_->settings().ranks)
    text += tr("<br>The CPU prediction assumes one core per device; %1 devices on %2 ranks "
               "share them.")
                .arg(plan->summary.devices)
                .arg(runner_->settings().ranks);
  // The whole mpirun command line is long: its program and ranks here, all of it in the tooltip.
  const QString how =
      o.command.contains(QLatin1String("mpirun"))
          ? tr("%1 ranks under mpirun (unity-worker)").arg(runner_->settings().ranks)
          : o.command;
  text += tr("<br><span style='color:#607d8b'>Ran %1.</span>").arg(how.toHtmlEscaped());
  result_->setToolTip(o.command);
  if (o.runId > 0)
    text += tr(" Recorded as run %1 in %2.")
                .arg(o.runId)
                .arg(QFileInfo(document_->project()->file()).fileName().toHtmlEscaped());
  if (!o.projectError.isEmpty())
    text += tr(" <span style='color:#d32f2f'>Not recorded: %1</span>")
                .arg(o.projectError.toHtmlEscaped());
  result_->setText(text);
}

void RunView::refreshRuns() {
  runs_->setRowCount(0);
  ProjectSession* project = document_->project();
  if (!project->isOpen()) return;
  std::map<std::int64_t, projects::PlanRecord> plans;
  for (auto& p : project->plans()) plans[p.id] = p;
  const auto runs = project->runs();
  runs_->setRowCount(int(runs.size()));
  int row = 0;
  for (auto it = runs.rbegin(); it != runs.rend(); ++it, ++row) {
    const auto& r = *it;
    const auto plan = plans.find(r.plan_id);
    const QString model =
        plan == plans.end() ? QString() : QString::fromStdString(plan->second.model);
    const QString mode =
        plan == plans.end() ? QString() : QString::fromStdString(plan->second.mode);
    const QString iterations =
        r.config.contains("iterations") ? QString::number(r.config.value("iterations", 0)) : "";
    const QStringList cells{QString::number(r.id),
                            model,
                            mode,
                            QString::fromStdString(r.backend),
                            QString::number(r.ranks),
                            iterations,
                            QString::fromStdString(r.status),
                            number(r.result, "measured_iteration_ms"),
                            number(r.result, "predicted_cpu_iteration_ms"),
                            QString::fromStdString(r.started_at)};
    for (int c = 0; c < int(cells.size()); ++c) {
      auto* item = new QTableWidgetItem(cells[c]);
      if (c == 0) item->setData(Qt::UserRole, qint64(r.id));
      if (c == 0) item->setData(Qt::UserRole + 1, r.config.value("warmup", 0));
      runs_->setItem(row, c, item);
    }
  }
  runs_->resizeColumnsToContents();
}

void RunView::showRecordedRun(int row) {
  if (running() || !runs_->item(row, 0)) return;
  const qint64 id = runs_->item(row, 0)->data(Qt::UserRole).toLongLong();
  const int warmup = runs_->item(row, 0)->data(Qt::UserRole + 1).toInt();
  QList<RunIteration> its;
  for (const auto& m : document_->project()->runMetrics(id))
    its.append({int(m.iteration), m.iteration < warmup, m.loss.value_or(0), m.time_ms});
  chart_->reset();
  const QString predicted = runs_->item(row, 8)->text();
  if (!predicted.isEmpty()) chart_->setPredicted(predicted.toDouble());
  chart_->addIterations(its);
  status_->setText(tr("Run %1 from the project: %2 iterations, %3")
                       .arg(id)
                       .arg(its.size())
                       .arg(runs_->item(row, 6)->text()));
}

}  // namespace unity::views
