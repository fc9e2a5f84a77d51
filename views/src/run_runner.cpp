#include "unity/views/run_runner.h"

#include <QCoreApplication>
#include <QDeadlineTimer>
#include <QFile>
#include <QTemporaryDir>
#include <QThread>
#include <QTimer>

#include <exception>
#include <mutex>
#include <optional>

#include "thread_priority.h"
#include "unity/core/errors.h"
#include "unity/core/json_io.h"
#include "unity/core/machine_spec.h"
#include "unity/executor/backends.h"
#include "unity/executor/communicator.h"
#include "unity/executor/compute_precision.h"
#include "unity/executor/device_backend.h"
#include "unity/executor/launcher.h"
#include "unity/executor/op_profiles.h"
#include "unity/executor/pipeline_training.h"
#include "unity/executor/program.h"
#include "unity/executor/run_files.h"
#include "unity/executor/training.h"
#include "unity/projects/project.h"

namespace unity::views {

namespace {
constexpr int kWorkerNiceness = 5;

// Thrown from the executor's callbacks to end a run the user stopped.
struct RunStopped {};

std::string toStd(const QString& s) { return s.toStdString(); }
}  // namespace

// What the worker and the GUI share: the stop flag and the iterations not yet drained.
struct RunRunner::Shared {
  std::atomic<bool> stop{false};
  std::mutex mutex;
  std::vector<RunIteration> pending;
  std::optional<std::pair<double, double>> predicted;  // plan machine, CPU
  RunOutcome outcome;                                  // written by the worker before it ends

  void push(const executor::IterationReport& r) {
    std::lock_guard lock(mutex);
    pending.push_back({r.index, r.warmup, r.loss, r.milliseconds});
  }
};

namespace {

// Stops a one-rank run between two operators.
class StopMonitor : public executor::ProgressMonitor {
 public:
  explicit StopMonitor(const std::atomic<bool>& stop) : stop_(stop) {}
  void at(int, Phase, NodeId) override {
    if (stop_.load(std::memory_order_relaxed)) throw RunStopped{};
  }

 private:
  const std::atomic<bool>& stop_;
};

// The run row of the project, written from the worker thread on its own connection.
class ProjectRun {
 public:
  ProjectRun(const QString& file, const Plan& plan, const RunSettings& s) {
    if (file.isEmpty()) return;
    try {
      project_.emplace(projects::Project::open(QFile::encodeName(file).toStdString()));
      const auto stored = project_->find_plan(plan);
      const std::int64_t planId = stored ? *stored : project_->add_plan(plan);
      runId_ = project_->begin_run(planId, toStd(s.backend), s.ranks,
                                   {{"iterations", s.iterations},
                                    {"warmup", s.warmup},
                                    {"threads", s.threads},
                                    {"source", "unity-explorer"}});
    } catch (const std::exception& e) {
      error_ = QString::fromUtf8(e.what());
      project_.reset();
    }
  }
  ~ProjectRun() {
    if (project_ && runId_ && !finished_) finish("failed", {{"error", "abandoned"}});
  }
  void add(const std::vector<RunIteration>& its) {
    if (!project_ || !runId_ || its.empty()) return;
    std::vector<projects::RunMetric> metrics;
    for (const RunIteration& it : its) metrics.push_back({it.index, it.ms, it.loss});
    guard([&] { project_->add_run_metrics(runId_, metrics); });
  }
  void finish(std::string_view status, const nlohmann::json& result) {
    finished_ = true;
    if (project_ && runId_) guard([&] { project_->finish_run(runId_, status, result); });
    project_.reset();  // closed before the GUI hears that the run ended
  }
  std::int64_t runId() const { return runId_; }
  QString error() const { return error_; }

 private:
  template <typename F>
  void guard(F&& f) {
    try {
      f();
    } catch (const std::exception& e) {
      if (error_.isEmpty()) error_ = QString::fromUtf8(e.what());
    }
  }
  std::optional<projects::Project> project_;
  std::int64_t runId_ = 0;
  bool finished_ = false;
  QString error_;
};

double medianOf(const std::vector<double>& v) { return v.empty() ? 0 : executor::median(v); }

}  // namespace

RunRunner::RunRunner(QObject* parent) : QObject(parent) {
  qRegisterMetaType<RunIteration>();
  qRegisterMetaType<QList<RunIteration>>();
  qRegisterMetaType<RunOutcome>();
  qRegisterMetaType<RunRunner::State>();
}

RunRunner::~RunRunner() {
  if (shared_) shared_->stop = true;
  if (worker_.joinable()) worker_.join();
}

QString RunRunner::stateName(State s) {
  switch (s) {
    case State::Idle:
      return tr("idle");
    case State::Running:
      return tr("running");
    case State::Stopping:
      return tr("stopping");
    case State::Finished:
      return tr("finished");
    case State::Failed:
      return tr("failed");
  }
  return {};
}

void RunRunner::setState(State s) {
  if (s == state_) return;
  state_ = s;
  emit stateChanged(s);
}

double RunRunner::predictOnCpu(const Plan& plan) {
  // A pipelined plan's mapping has no views to re-cost: its own prediction (and timeline) is what
  // the run is compared with.
  if (plan.pipeline) return 0;
  const MachineSpec cpu = load_machine("cpu-local", {0, std::max(1, plan.summary.devices)});
  return executor::predicted_iteration_ms(plan.pcg, plan.mapping.views, cpu, plan.summary.optimizer,
                                          nullptr);
}

bool RunRunner::start(std::shared_ptr<const Plan> plan, const RunSettings& settings) {
  if (isActive()) {
    error_ = tr("a run is in progress");
    return false;
  }
  if (!plan) {
    error_ = tr("there is no plan to run");
    return false;
  }
  const int devices = std::max(1, plan->summary.devices);
  if (settings.ranks < 1 || settings.ranks > devices) {
    error_ = tr("ranks must be between 1 and the plan's %1 devices, got %2")
                 .arg(devices)
                 .arg(settings.ranks);
    return false;
  }
  if (plan->pipeline && settings.ranks != devices) {
    error_ = tr("a pipelined plan runs one rank per device: %1 ranks, got %2")
                 .arg(devices)
                 .arg(settings.ranks);
    return false;
  }
  if (settings.iterations < 1 || settings.warmup < 0) {
    error_ = tr("a run needs at least one measured iteration");
    return false;
  }
  bool known = false;
  for (const auto& b : executor::available_backends())
    if (QString::fromStdString(b.name) == settings.backend) {
      known = true;
      if (!b.available) {
        error_ = tr("the %1 backend is not available: %2")
                     .arg(settings.backend, QString::fromStdString(b.detail));
        return false;
      }
    }
  if (!known) {
    error_ = tr("unknown backend '%1'").arg(settings.backend);
    return false;
  }
  if (worker_.joinable()) worker_.join();
  plan_ = std::move(plan);
  settings_ = settings;
  error_.clear();
  iterations_.clear();
  outcome_ = RunOutcome();
  updates_ = 0;
  shared_ = std::make_shared<Shared>();
  setState(State::Running);
  emit started();

  auto* timer = new QTimer(this);
  timer->setInterval(kUpdateIntervalMs);
  connect(timer, &QTimer::timeout, this, [this] { drain(false); });
  connect(this, &RunRunner::stateChanged, timer, [timer](State s) {
    if (s == State::Finished || s == State::Failed) timer->deleteLater();
  });
  timer->start();

  worker_ = std::thread([this, shared = shared_, plan = plan_, s = settings_] {
    lowerCurrentThreadPriority(kWorkerNiceness);
    RunOutcome& out = shared->outcome;
    out.predictedMs = plan->summary.iteration_time_ms;
    try {
      out.predictedCpuMs = predictOnCpu(*plan);
    } catch (const std::exception&) {
      out.predictedCpuMs = 0;  // a plan whose operators cpu-local cannot cost: no CPU prediction
    }
    {
      std::lock_guard lock(shared->mutex);
      shared->predicted = std::pair(out.predictedMs, out.predictedCpuMs);
    }
    ProjectRun record(s.projectFile, *plan, s);
    out.runId = record.runId();
    const std::string optimizer = plan->summary.optimizer.empty() ? "sgd" : plan->summary.optimizer;
    // Iterations go to the GUI as they finish and to the project in the same order.
    auto onIteration = [&](const executor::IterationReport& r) {
      shared->push(r);
      record.add({RunIteration{r.index, r.warmup, r.loss, r.milliseconds}});
      if (shared->stop.load()) throw RunStopped{};
    };
    executor::TrainingResult result;
    try {
      if (s.ranks == 1 && s.backend == QLatin1String("cpu") && !plan->pipeline) {
        out.command = tr("in this process (1 CPU rank, %1 BLAS thread%2)")
                          .arg(s.threads)
                          .arg(s.threads == 1 ? "" : "s");
        const executor::Program program =
            executor::lower_plan(executor::executed_graph(plan->pcg), plan->mapping.views, 1);
        auto backend = executor::make_cpu_backend(s.threads);
        auto comm = executor::make_local_communicator();
        StopMonitor monitor(shared->stop);
        executor::TrainingOptions t;
        t.iterations = s.iterations;
        t.warmup = s.warmup;
        t.optimizer = optimizer;
        t.on_iteration = onIteration;
        t.monitor = &monitor;
        result = executor::train(program, t, *backend, *comm);
      } else {
        // Lowering first: a plan the executor cannot run fails here, naming the node, before
        // mpirun starts.
        if (plan->pipeline)
          executor::check_pipeline_run(*plan, s.ranks);  // one rank per device, stages it runs
        else
          (void)executor::lower_plan(executor::executed_graph(plan->pcg), plan->mapping.views,
                                     s.ranks);
        QTemporaryDir dir;
        if (!dir.isValid()) throw executor::RunError("cannot create a temporary directory");
        const std::string planFile = QFile::encodeName(dir.filePath("plan.json")).toStdString();
        write_text_file_atomic(planFile, plan_to_json(*plan).dump() + "\n");
        executor::LaunchOptions l;
        l.plan = planFile;
        l.ranks = s.ranks;
        l.backend = toStd(s.backend);
        l.iterations = s.iterations;
        l.warmup = s.warmup;
        l.optimizer = optimizer;
        l.threads = s.threads;
        l.timeout_seconds = s.timeoutSeconds;
        l.worker = QFile::encodeName(s.worker).toStdString();
        l.mpirun = QFile::encodeName(s.mpirun).toStdString();
        l.on_iteration = onIteration;
        executor::LaunchResult launched = executor::launch_run(l);
        out.command = QString::fromStdString(executor::command_text(launched.command));
        result = std::move(launched.training);
      }
      out.status = QStringLiteral("completed");
    } catch (const RunStopped&) {
      out.status = QStringLiteral("cancelled");
    } catch (const std::exception& e) {
      out.status = QStringLiteral("failed");
      out.error = QString::fromUtf8(e.what());
    }
    // A stopped or failed run has no TrainingResult: only what was reported.
    std::vector<double> measured;
    if (out.status == QLatin1String("completed")) {
      measured = result.iteration_ms;
      out.setupMs = result.setup_ms;
    }
    nlohmann::json json = {{"backend", toStd(s.backend)},
                           {"ranks", s.ranks},
                           {"iterations", s.iterations},
                           {"warmup", s.warmup},
                           {"predicted_iteration_ms", out.predictedMs},
                           {"predicted_cpu_iteration_ms", out.predictedCpuMs},
                           {"model", plan->summary.model},
                           {"mode", plan->summary.mode},
                           {"machine", plan->summary.machine},
                           {"plan_devices", plan->summary.devices},
                           {"optimizer", optimizer},
                           {"command", toStd(out.command)}};
    if (out.status == QLatin1String("completed")) {
      out.measuredMs = medianOf(measured);
      json["measured_iteration_ms"] = out.measuredMs;
      json["losses"] = result.losses;
      json["iteration_ms"] = result.iteration_ms;
      json["setup_ms"] = result.setup_ms;
      if (result.pipeline) {
        // A pipelined plan's run: what `unity run --json` adds, and the measured timeline.
        const executor::PipelineMeasurement& pm = *result.pipeline;
        json["stages"] = int(pm.stages.size());
        json["bubble_fraction_measured"] = pm.bubble_fraction;
        json["peak_memory_bytes_measured"] = pm.peak_memory_bytes;
        json["timeline"] = timeline_to_json(pm.timeline);
        out.pipeline = std::make_shared<const executor::PipelineMeasurement>(pm);
      }
    }
    if (!out.error.isEmpty()) json["error"] = toStd(out.error);
    record.finish(toStd(out.status), json);
    out.projectError = record.error();
    QMetaObject::invokeMethod(this, &RunRunner::onWorkerDone, Qt::QueuedConnection);
  });
  return true;
}

void RunRunner::stop() {
  if (state_ != State::Running) return;
  shared_->stop = true;
  setState(State::Stopping);
}

bool RunRunner::waitForFinished(int timeoutMs) {
  QDeadlineTimer deadline(timeoutMs);
  while (isActive() && !deadline.hasExpired()) {
    QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
    QThread::msleep(2);
  }
  return !isActive();
}

void RunRunner::drain(bool last) {
  if (!shared_) return;
  // The buffers go back and forth between the threads and are never freed during the run (see
  // thread_priority.h).
  std::vector<RunIteration> fresh = std::move(spareIterations_);
  fresh.clear();
  std::optional<std::pair<double, double>> predicted;
  {
    const auto lock = guiLock(shared_->mutex, last);
    if (!lock) {
      spareIterations_ = std::move(fresh);
      return;
    }
    fresh.swap(shared_->pending);
    predicted.swap(shared_->predicted);
  }
  if (predicted) emit this->predicted(predicted->first, predicted->second);
  if (!fresh.empty()) {
    const QList<RunIteration> batch(fresh.begin(), fresh.end());
    iterations_ += batch;
    ++updates_;
    emit iterationsDone(batch);
  }
  spareIterations_ = std::move(fresh);
}

void RunRunner::onWorkerDone() {
  // Not joined here: the thread may still wait for a core to return, and the GUI does not wait for
  // it (the next run or the destructor joins it). It posted this call as its last act.
  drain(true);
  outcome_ = shared_->outcome;
  outcome_.iterations = iterations_;
  if (outcome_.status == QLatin1String("failed")) {
    error_ = outcome_.error;
    setState(State::Failed);
    emit failed(error_);
    return;
  }
  setState(State::Finished);
  emit finished(outcome_);
}

}  // namespace unity::views
