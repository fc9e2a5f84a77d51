// Training runs from the explorer: the runner's signals arrive to the end, its losses are the
// executor's own (bit for bit in one process, to float rounding across mpirun ranks), Stop ends a
// run early, a run is recorded in the project with every iteration, the run view charts what it
// measured, and the GUI thread stays responsive while a run trains.
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

#include <QCheckBox>
#include <QTableWidget>

#include <limits>

#include "run_chart.h"
#include "unity/core/zoo/scaled_zoo.h"
#include "unity/executor/communicator.h"
#include "unity/executor/device_backend.h"
#include "unity/executor/program.h"
#include "unity/executor/training.h"
#include "unity/projects/project.h"
#include "unity/views/operator_times_panel.h"
#include "unity/views/project_session.h"
#include "unity/views/run_runner.h"
#include "unity/views/run_view.h"
#include "view_fixtures.h"
#include "views_test.h"

using namespace unity;
using namespace unity::views;
using namespace unity::views::testing;

namespace {

// The paper's Figure 1 MLP, 64 samples, data parallel on two CPU devices.
std::shared_ptr<const Plan> figure1Plan(const std::string& mode = "data-parallel") {
  const MachineSpec machine = load_machine("cpu-local", {0, 2});
  return makePlan(zoo::build("mnist-mlp", 64), machine, mode);
}

RunSettings settings(int ranks, int iterations, int warmup) {
  RunSettings s;
  s.ranks = ranks;
  s.iterations = iterations;
  s.warmup = warmup;
  s.worker = QStringLiteral(UNITY_WORKER_PATH);
  return s;
}

// The executor's losses for the plan on one rank, run directly (the reference).
std::vector<double> referenceLosses(const Plan& plan, int iterations, int warmup) {
  const auto program = executor::lower_plan(plan.pcg, plan.mapping.views, 1);
  auto backend = executor::make_cpu_backend(1);
  auto comm = executor::make_local_communicator();
  executor::TrainingOptions t;
  t.iterations = iterations;
  t.warmup = warmup;
  t.optimizer = plan.summary.optimizer;
  const auto result = executor::train(program, t, *backend, *comm);
  std::vector<double> all = result.warmup_losses;
  all.insert(all.end(), result.losses.begin(), result.losses.end());
  return all;
}

bool haveMpirun() {
  return !qEnvironmentVariableIsEmpty("UNITY_MPIRUN") ||
         !QStandardPaths::findExecutable(QStringLiteral("mpirun")).isEmpty();
}

int totalIterations(const QList<QVariantList>& spy) {
  int n = 0;
  for (const auto& args : spy) n += int(args.at(0).value<QList<RunIteration>>().size());
  return n;
}

}  // namespace

class RunViewTests : public QObject {
  Q_OBJECT

 private slots:
  void runnerEmitsItsSignalsToTheEnd() {
    const auto plan = figure1Plan();
    RunRunner runner;
    QSignalSpy started(&runner, &RunRunner::started);
    QSignalSpy predicted(&runner, &RunRunner::predicted);
    QSignalSpy iterations(&runner, &RunRunner::iterationsDone);
    QSignalSpy finished(&runner, &RunRunner::finished);
    QSignalSpy failed(&runner, &RunRunner::failed);
    QVERIFY2(runner.start(plan, settings(1, 6, 2)), qPrintable(runner.error()));
    QVERIFY(!runner.start(plan, settings(1, 6, 2)));  // one at a time
    QCOMPARE(started.count(), 1);
    QVERIFY(finished.wait(60000));
    QCOMPARE(failed.count(), 0);
    QCOMPARE(finished.count(), 1);
    QCOMPARE(predicted.count(), 1);
    QCOMPARE(predicted.at(0).at(0).toDouble(), plan->summary.iteration_time_ms);
    QVERIFY(predicted.at(0).at(1).toDouble() > 0);  // the mapping costed on cpu-local
    QCOMPARE(totalIterations(iterations), 8);
    QCOMPARE(runner.state(), RunRunner::State::Finished);
    const RunOutcome& o = runner.outcome();
    QCOMPARE(o.status, QString("completed"));
    QCOMPARE(o.iterations.size(), 8);
    QVERIFY(o.iterations[0].warmup && o.iterations[1].warmup && !o.iterations[2].warmup);
    QVERIFY(o.measuredMs > 0);
    // In one process the run is the executor's own computation: equal losses, bit for bit.
    const auto reference = referenceLosses(*plan, 6, 2);
    QCOMPARE(int(reference.size()), 8);
    for (int i = 0; i < 8; ++i) {
      QCOMPARE(o.iterations[i].index, i);
      QCOMPARE(o.iterations[i].loss, reference[i]);
    }
    QVERIFY(o.iterations.last().loss < o.iterations.first().loss);
  }

  void mpirunRanksAgreeWithOneRank() {
    if (!haveMpirun()) QSKIP("no mpirun on this machine (set UNITY_MPIRUN or install Open MPI)");
    const auto plan = figure1Plan("joint");
    RunRunner runner;
    QSignalSpy finished(&runner, &RunRunner::finished);
    QSignalSpy failed(&runner, &RunRunner::failed);
    QVERIFY2(runner.start(plan, settings(2, 5, 0)), qPrintable(runner.error()));
    QVERIFY(runner.waitForFinished(120000));
    QVERIFY2(failed.isEmpty(), qPrintable(runner.error()));
    const RunOutcome& o = runner.outcome();
    QVERIFY2(o.command.contains("mpirun") && o.command.contains("-np 2"), qPrintable(o.command));
    const auto reference = referenceLosses(*plan, 5, 0);
    QCOMPARE(o.iterations.size(), 5);
    for (int i = 0; i < 5; ++i)
      QVERIFY2(std::abs(o.iterations[i].loss - reference[i]) <= 1e-5 * std::abs(reference[i]),
               qPrintable(QString("iteration %1: %2 vs %3")
                              .arg(i)
                              .arg(o.iterations[i].loss)
                              .arg(reference[i])));
  }

  void stopEndsARunEarly() {
    const auto plan = figure1Plan();
    RunRunner runner;
    QSignalSpy iterations(&runner, &RunRunner::iterationsDone);
    QSignalSpy finished(&runner, &RunRunner::finished);
    QVERIFY(runner.start(plan, settings(1, 1000000, 0)));
    QVERIFY(iterations.wait(60000));
    runner.stop();
    QCOMPARE(runner.state(), RunRunner::State::Stopping);
    QVERIFY(finished.wait(60000));
    QCOMPARE(runner.outcome().status, QString("cancelled"));
    QVERIFY(runner.outcome().iterations.size() < 1000000);
    QCOMPARE(int(runner.outcome().iterations.size()), totalIterations(iterations));
  }

  void mpirunRunStopsToo() {
    if (!haveMpirun()) QSKIP("no mpirun on this machine (set UNITY_MPIRUN or install Open MPI)");
    RunRunner runner;
    QSignalSpy iterations(&runner, &RunRunner::iterationsDone);
    QSignalSpy finished(&runner, &RunRunner::finished);
    QVERIFY(runner.start(figure1Plan(), settings(2, 1000000, 0)));
    QVERIFY(iterations.wait(120000));
    runner.stop();
    QVERIFY(finished.wait(60000));  // mpirun's process group is killed, not waited out
    QCOMPARE(runner.outcome().status, QString("cancelled"));
  }

  void impossibleRunsAreRefused() {
    const auto plan = figure1Plan();
    RunRunner runner;
    QVERIFY(!runner.start(plan, settings(3, 5, 0)));  // more ranks than the plan's 2 devices
    QVERIFY2(runner.error().contains("between 1 and the plan's 2 devices"),
             qPrintable(runner.error()));
    RunSettings unknown = settings(1, 5, 0);
    unknown.backend = "tpu";
    QVERIFY(!runner.start(plan, unknown));
    QVERIFY(runner.error().contains("tpu"));
    QVERIFY(!runner.start(nullptr, settings(1, 5, 0)));
    QCOMPARE(runner.state(), RunRunner::State::Idle);
  }

  void runIsRecordedInTheProject() {
    QTemporaryDir dir;
    const QString file = dir.filePath("runs.unity");
    projects::Project::create(file.toStdString());
    const auto plan = figure1Plan();
    RunSettings s = settings(1, 4, 1);
    s.projectFile = file;
    RunRunner runner;
    QVERIFY(runner.start(plan, s));
    QVERIFY(runner.waitForFinished(60000));
    const RunOutcome& o = runner.outcome();
    QVERIFY2(o.projectError.isEmpty(), qPrintable(o.projectError));
    QVERIFY(o.runId > 0);
    const auto project = projects::Project::open(file.toStdString(), projects::Access::ReadOnly);
    const auto runs = project.runs();
    QCOMPARE(int(runs.size()), 1);
    QCOMPARE(runs[0].id, o.runId);
    QCOMPARE(runs[0].status, std::string("completed"));
    QCOMPARE(runs[0].ranks, 1);
    QCOMPARE(runs[0].backend, std::string("cpu"));
    QCOMPARE(runs[0].result["measured_iteration_ms"].get<double>(), o.measuredMs);
    QCOMPARE(project.load_plan(runs[0].plan_id).summary.iteration_time_ms,
             plan->summary.iteration_time_ms);
    const auto metrics = project.run_metrics(o.runId);
    QCOMPARE(int(metrics.size()), 5);  // the warm-up iteration too
    for (int i = 0; i < 5; ++i) {
      QCOMPARE(metrics[i].iteration, std::int64_t(i));
      QCOMPARE(*metrics[i].loss, o.iterations[i].loss);
      QCOMPARE(metrics[i].time_ms, o.iterations[i].ms);
    }
  }

  void runViewChartsAndListsTheRun() {
    QTemporaryDir dir;
    ExplorerDocument doc;
    openIn(doc, "mnist-mlp", "cpu-local", {0, 2});
    doc.setPlan("data-parallel", makePlan(*doc.model(), *doc.machine(), "data-parallel"));
    QString error;
    QVERIFY2(doc.project()->create(dir.filePath("view.unity"), &error), qPrintable(error));
    RunView view(&doc);
    view.resize(1200, 760);
    view.show();
    view.setRanks(1);
    view.setIterations(5, 1);
    QVERIFY(view.planText().contains("Data parallel"));
    QSignalSpy done(&view, &RunView::runFinished);
    QVERIFY(view.startRun());
    QVERIFY(view.busy());
    QVERIFY(done.wait(60000));
    QVERIFY(!view.busy());
    QCOMPARE(view.chart()->measuredPointCount(), 5);
    QCOMPARE(view.chart()->lossPointCount(), 6);
    QVERIFY2(view.resultText().contains("Measured") &&
                 view.resultText().contains("predicted on this CPU") &&
                 view.resultText().contains("Recorded as run 1"),
             qPrintable(view.resultText()));
    QCOMPARE(view.runsTable()->rowCount(), 1);
    QCOMPARE(view.runsTable()->item(0, 6)->text(), QString("completed"));
    // A recorded run charts again from the project.
    view.chart()->reset();
    QMetaObject::invokeMethod(view.runsTable(), "cellClicked", Q_ARG(int, 0), Q_ARG(int, 0));
    QCOMPARE(view.chart()->lossPointCount(), 6);
    QCOMPARE(view.chart()->measuredPointCount(), 5);
  }

  // A profiled run shows each operator's predicted and measured time, largest error first, with one
  // scatter point per operator, and keeps the times as the project's operator profiles.
  void profiledRunComparesOperatorsAndKeepsTheirTimes() {
    QTemporaryDir dir;
    ExplorerDocument doc;
    openIn(doc, "mnist-mlp", "cpu-local", {0, 2});
    doc.setPlan("data-parallel", makePlan(*doc.model(), *doc.machine(), "data-parallel"));
    QString error;
    const QString file = dir.filePath("profiled.unity");
    QVERIFY2(doc.project()->create(file, &error), qPrintable(error));
    RunView view(&doc);
    view.resize(1200, 900);
    view.setRanks(1);
    view.setIterations(4, 1);
    view.profileOption()->setChecked(true);
    QSignalSpy done(&view, &RunView::runFinished);
    QVERIFY(view.startRun());
    QVERIFY(done.wait(60000));
    OperatorTimesPanel* panel = view.operatorTimes();
    QVERIFY(panel->isVisibleTo(&view));
    const int rows = panel->table()->rowCount();
    // mnist-mlp's linear layers, activations and loss, at least.
    QVERIFY2(rows >= 3, qPrintable(QString::number(rows)));
    QVERIFY(panel->pointCount() > 0 && panel->pointCount() <= rows);
    double previous = std::numeric_limits<double>::infinity();
    for (int r = 0; r < rows; ++r) {  // largest error first
      const double p = panel->table()->item(r, 2)->text().toDouble();
      const double m = panel->table()->item(r, 3)->text().toDouble();
      if (p <= 0 || m <= 0) continue;
      const double e = std::max(p, m) / std::min(p, m);
      QVERIFY(e <= previous * 1.01);  // the table shows 4 decimals
      previous = e;
    }
    doc.project()->close();
    const auto project = projects::Project::open(file.toStdString(), projects::Access::ReadOnly);
    QVERIFY(project.op_profiles().size() >= 3);
  }

  void reducedModelIsPlannedAgainAndRun() {
    ExplorerDocument doc;
    openIn(doc, "resnext50", "summit", {0, 4});
    doc.setPlan("data-parallel", makePlan(*doc.model(), *doc.machine(), "data-parallel"));
    RunView view(&doc);
    view.setRanks(1);
    view.setIterations(2, 0);
    view.setReduced(true, 0.0625, 1);
    QSignalSpy done(&view, &RunView::runFinished);
    QVERIFY(view.startRun());
    QVERIFY(done.wait(120000));
    const auto ran = view.runPlan();
    QVERIFY(ran != doc.plan("data-parallel"));
    QCOMPARE(ran->pcg.batch_size, std::int64_t(4));  // 1 per device on 4 devices
    QCOMPARE(ran->summary.devices, 4);
    QCOMPARE(ran->summary.mode, std::string("data-parallel"));
    QCOMPARE(view.runner()->outcome().iterations.size(), 2);
  }

  void guiStaysResponsiveDuringARun() {
    ExplorerDocument doc;
    openIn(doc, "mnist-mlp", "cpu-local", {0, 2});
    doc.setPlan("data-parallel", makePlan(*doc.model(), *doc.machine(), "data-parallel"));
    RunView view(&doc);
    view.resize(1200, 760);
    view.show();
    view.setRanks(1);
    view.setIterations(300, 0);
    QSignalSpy done(&view, &RunView::runFinished);
    LatenessProbe probe;
    probe.start();
    QVERIFY(view.startRun());
    QVERIFY(done.wait(120000));
    probe.stop();
    QCOMPARE(view.chart()->measuredPointCount(), 300);
    // The lateness is logged, not asserted: the batching below is what keeps the GUI free.
    qInfo("mnist-mlp run of 300 iterations: %s, %d updates", qPrintable(probe.report()),
          view.runner()->updatesDelivered());
    QVERIFY(view.runner()->updatesDelivered() < 300);  // batched, not one signal per iteration
  }
};

UNITY_VIEWS_SUITE(RunViewTests);
#include "test_run_view.moc"
