#include "unity/views/run_runner.h"

#include <QCoreApplication>
#include <QDeadlineTimer>
#include <QFile>
#include <QThread>
#include <QTimer>

#include <exception>
#include <mutex>
#include <optional>

#include "thread_priority.h"
#include "unity/executor/run_files.h"
#include "unity/executor/training.h"
#include "unity/projects/project.h"
#include "unity/use_cases/run_and_record.h"

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

// The run row of the project, written from the worker thread on its own connection. A project
// that cannot be written does not stop the run: the error is shown beside its result.
class ProjectRun {
 public:
  ProjectRun(const QString& file, const Plan& plan, const use_cases::RunRequest& request) {
    if (file.isEmpty()) return;
    guard([&] {
      project_.emplace(projects::Project::open(QFile::encodeName(file).toStdString()));
      recording_.emplace(*project_, plan, request);
    });
    if (!recording_) project_.reset();
  }
  void add(const executor::IterationReport& r) {
    if (recording_) guard([&] { recording_->add_iterations({{r.index, r.milliseconds, r.loss}}); });
  }
  // Finishes the row, and keeps a profiled run's operator times as the project's profiles.
  void finish(std::string_view status, const nlohmann::json& result, const Plan& plan,
              const executor::TrainingResult* profiled) {
    if (!recording_) return;
    guard([&] {
      if (profiled) recording_->keep_profiles(plan, *profiled);
      recording_->finish(projects::status_from_string(status).value_or(projects::Status::Failed),
                         result);
    });
    recording_.reset();
    project_.reset();  // closed before the GUI hears that the run ended
  }
  std::int64_t runId() const { return recording_ ? recording_->run_id() : 0; }
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
  std::optional<use_cases::RunRecording> recording_;
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

use_cases::CpuPrediction RunRunner::predictOnCpu(const Plan& plan, const QString& projectFile) {
  std::optional<projects::Project> project;
  if (!projectFile.isEmpty())
    project.emplace(projects::Project::open(QFile::encodeName(projectFile).toStdString(),
                                            projects::Access::ReadOnly));
  return use_cases::predict_on_this_cpu(plan, project ? &*project : nullptr);
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
  use_cases::RunRequest request;
  request.backend = toStd(settings.backend);
  request.ranks = settings.ranks;
  request.iterations = settings.iterations;
  request.warmup = settings.warmup;
  request.threads = settings.threads;
  request.timeout_seconds = settings.timeoutSeconds;
  request.profile = settings.profile;
  request.worker = QFile::encodeName(settings.worker).toStdString();
  request.mpirun = QFile::encodeName(settings.mpirun).toStdString();
  try {
    use_cases::check_run_request(*plan, request);
  } catch (const std::exception& e) {
    error_ = QString::fromUtf8(e.what());
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

  worker_ = std::thread([this, shared = shared_, plan = plan_, s = settings_, request]() mutable {
    lowerCurrentThreadPriority(kWorkerNiceness);
    RunOutcome& out = shared->outcome;
    out.predictedMs = plan->summary.iteration_time_ms;
    try {
      const use_cases::CpuPrediction cpu = predictOnCpu(*plan, s.projectFile);
      out.predictedCpuMs = cpu.ms;
      out.cpuCalibrated = cpu.calibrated;
      out.cpuProfiles = cpu.profiles;
      out.cpuFigures = QString::fromStdString(cpu.figures);
    } catch (const std::exception&) {
      out.predictedCpuMs = 0;  // a plan whose operators cpu-local cannot cost: no CPU prediction
    }
    {
      std::lock_guard lock(shared->mutex);
      shared->predicted = std::pair(out.predictedMs, out.predictedCpuMs);
    }
    ProjectRun record(s.projectFile, *plan, request);
    out.runId = record.runId();
    // Iterations go to the GUI as they finish and to the project in the same order.
    request.on_iteration = [&](const executor::IterationReport& r) {
      shared->push(r);
      record.add(r);
      if (shared->stop.load()) throw RunStopped{};
    };
    StopMonitor monitor(shared->stop);
    request.monitor = &monitor;
    use_cases::RunResult run;
    try {
      run = use_cases::run_plan(*plan, request);
      out.status = QStringLiteral("completed");
    } catch (const RunStopped&) {
      out.status = QStringLiteral("cancelled");
    } catch (const std::exception& e) {
      out.status = QStringLiteral("failed");
      out.error = QString::fromUtf8(e.what());
    }
    out.command = QString::fromStdString(run.command);
    nlohmann::json json = use_cases::run_result_json(*plan, request, run);
    json["predicted_iteration_ms"] = out.predictedMs;
    json["predicted_cpu_iteration_ms"] = out.predictedCpuMs;
    // A stopped or failed run has no TrainingResult: only what was reported.
    if (out.status == QLatin1String("completed")) {
      const executor::TrainingResult& result = run.training;
      out.setupMs = result.setup_ms;
      out.measuredMs = medianOf(result.iteration_ms);
      out.profile = result.profile;
      if (result.pipeline) {
        json["stages"] = int(result.pipeline->stages.size());
        out.pipeline = std::make_shared<const executor::PipelineMeasurement>(*result.pipeline);
      }
    } else {
      for (const char* key : {"measured_iteration_ms", "losses", "iteration_ms", "setup_ms"})
        json.erase(key);
    }
    if (!out.error.isEmpty()) json["error"] = toStd(out.error);
    const bool profiled = s.profile && out.status == QLatin1String("completed");
    record.finish(toStd(out.status), json, *plan, profiled ? &run.training : nullptr);
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
