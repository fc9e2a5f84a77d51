#pragma once
// Trains a plan for real with the executor (libunity_executor) on a worker thread and reports each
// iteration to the GUI through queued signals, at most about 30 times a second, as SearchRunner
// does for searches. One CPU rank trains inside this process (as `unity run` does); more ranks, or
// the CUDA backend, start `mpirun -np N unity-worker PLAN` and follow its event lines.
//
// With a project file the worker records the run there on its own connection (the plan, the run
// row, every iteration's time and loss, the result), so the GUI thread never waits for SQLite.
//
// Stop: a one-rank run stops at the next operator (its progress monitor throws); an mpirun run at
// the end of the iteration in flight (the launcher kills mpirun's process group).
#include <QList>
#include <QMetaType>
#include <QObject>
#include <QString>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "unity/core/plan/plan.h"
#include "unity/executor/training.h"
#include "unity/use_cases/calibrate.h"

namespace unity::views {

struct RunSettings {
  QString backend = QStringLiteral("cpu");  // cpu or cuda
  int ranks = 1;                            // processes; at most the plan's devices
  int iterations = 20;                      // measured iterations
  int warmup = 1;                           // unmeasured iterations first
  int threads = 1;                          // BLAS threads per rank
  double timeoutSeconds = 60;               // a rank without progress this long ends the run
  QString worker;                           // unity-worker (empty: beside this program, else PATH)
  QString mpirun;                           // empty: $UNITY_MPIRUN, else mpirun on PATH
  QString projectFile;                      // record the run there (empty: not recorded)
  // Time every operator; with a project, the times become its operator profiles.
  bool profile = false;
};

// One finished iteration, as every rank agreed on it.
struct RunIteration {
  int index = 0;  // 0-based over the whole run, warm-up iterations first
  bool warmup = false;
  double loss = 0;
  double ms = 0;  // the slowest rank's time
};

// What the run ended with.
struct RunOutcome {
  QString status;  // completed, cancelled (stopped), failed
  QString error;   // why it failed
  QList<RunIteration> iterations;
  double measuredMs = 0;   // median of the measured iterations (0 when there is none)
  double predictedMs = 0;  // the plan's prediction on the machine it was planned for
  double predictedCpuMs =
      0;  // the same mapping predicted on this CPU (cpu-local, one core a device)
  double setupMs = 0;
  QString command;       // what ran (mpirun ... or "in process")
  qint64 runId = 0;      // the project's run row (0: not recorded)
  QString projectError;  // recording failed (the run itself did not)
  // A pipelined plan's run: its measured timeline, per-stage times and memory (else null).
  std::shared_ptr<const executor::PipelineMeasurement> pipeline;
  // A profiled run: each operator's measured forward and backward time (the slowest rank's).
  std::vector<executor::OperatorProfile> profile;
  // The CPU prediction rests on the project's calibrated machine (else cpu-local with this
  // computer's probed figures, or the nominal ones), and this many measured operator times were
  // there to use; cpuFigures says which figures (use_cases::describe_cpu_figures).
  bool cpuCalibrated = false;
  std::size_t cpuProfiles = 0;
  QString cpuFigures;
};

class RunRunner : public QObject {
  Q_OBJECT

 public:
  enum class State { Idle, Running, Stopping, Finished, Failed };
  Q_ENUM(State)
  static constexpr int kUpdateIntervalMs = 33;

  explicit RunRunner(QObject* parent = nullptr);
  ~RunRunner() override;  // stops and waits for the worker

  // Starts a run of `plan`; false (with error()) when one runs or the settings cannot work for the
  // plan (no plan, ranks out of range, unknown backend).
  bool start(std::shared_ptr<const Plan> plan, const RunSettings& settings);
  void stop();
  bool waitForFinished(int timeoutMs);  // tests and --screenshot only: spins the event loop

  State state() const { return state_; }
  bool isActive() const { return state_ == State::Running || state_ == State::Stopping; }
  QString error() const { return error_; }
  std::shared_ptr<const Plan> plan() const { return plan_; }
  const RunSettings& settings() const { return settings_; }
  const QList<RunIteration>& iterations() const { return iterations_; }
  const RunOutcome& outcome() const { return outcome_; }
  int updatesDelivered() const { return updates_; }

  static QString stateName(State state);
  // The cost model's time for `plan`'s mapping on this CPU (cpu-local with the plan's devices).
  // The mapping costed on this computer's CPU (the project's calibrated machine and measured
  // operator times where `projectFile` has them).
  static use_cases::CpuPrediction predictOnCpu(const Plan& plan, const QString& projectFile);

 signals:
  void started();
  void predicted(double planMachineMs, double cpuMs);
  void iterationsDone(const QList<unity::views::RunIteration>& fresh);  // throttled
  void stateChanged(unity::views::RunRunner::State state);
  void finished(const unity::views::RunOutcome& outcome);  // completed or stopped
  void failed(const QString& message);

 private:
  struct Shared;
  // The iterations reported since the last drain; `last`: after the run ended.
  void drain(bool last);
  void onWorkerDone();
  void setState(State s);

  State state_ = State::Idle;
  RunSettings settings_;
  std::shared_ptr<const Plan> plan_;
  std::shared_ptr<Shared> shared_;
  std::thread worker_;
  QString error_;
  QList<RunIteration> iterations_;
  std::vector<RunIteration> spareIterations_;  // the drain's buffer, between two ticks
  RunOutcome outcome_;
  int updates_ = 0;
};

}  // namespace unity::views

Q_DECLARE_METATYPE(unity::views::RunIteration)
Q_DECLARE_METATYPE(unity::views::RunOutcome)
