// The explorer's main window (app/explorer) end to end, offscreen: zoo models are built for the
// machine, ONNX and plan files open, a dropped .onnx opens, bad files leave the current model, the
// views answer to their shortcuts, and a screenshot run settles with the search's plan selected.
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QMimeData>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QtTest>

#include "demo_project.h"
#include "main_window.h"
#include "unity/core/json_io.h"
#include "unity/core/plan/plan_optimizer.h"
#include "unity/core/zoo/model_zoo.h"
#include "unity/views/explorer_document.h"
#include "unity/views/memory_bars_chart.h"
#include "unity/views/memory_view.h"
#include "unity/views/pipeline_timeline_chart.h"
#include "unity/views/timeline_view.h"
#include "unity/views/topology_view.h"

using namespace unity;
using unity::explorer::MainWindow;

namespace {

bool settle(const MainWindow& w, int timeoutMs = 120000) {
  QElapsedTimer t;
  t.start();
  int idle = 0;
  while (t.elapsed() < timeoutMs) {
    QTest::qWait(20);
    idle = w.busy() ? 0 : idle + 1;
    if (idle >= 5) return true;
  }
  return false;
}

}  // namespace

class ExplorerWindowTests : public QObject {
  Q_OBJECT

 private slots:
  void zooModelsAreBuiltForTheMachine() {
    MainWindow w(/*rememberSettings=*/false);
    w.resize(1280, 800);
    w.show();
    QString error;
    QVERIFY2(w.loadMachine("summit", {2, 0}, &error), qPrintable(error));
    QVERIFY2(w.loadModel("resnext50", &error), qPrintable(error));
    auto* doc = w.document();
    QCOMPARE(doc->machine()->num_devices(), 12);
    QCOMPARE(doc->model()->batch_size, 64 * 12);  // the paper's batch per device, times the devices
    QTRY_VERIFY_WITH_TIMEOUT(doc->plan("data-parallel") != nullptr, 60000);
    QCOMPARE(doc->plan("data-parallel")->summary.devices, 12);
    QVERIFY(w.windowTitle().startsWith("resnext50"));
    // Another machine: the zoo model is rebuilt for its device count, old plans dropped.
    QVERIFY(QMetaObject::invokeMethod(&w, "selectMachine", Q_ARG(QString, "summit"),
                                      Q_ARG(unity::MachineSelection, (MachineSelection{0, 2}))));
    QTRY_COMPARE_WITH_TIMEOUT(doc->model()->batch_size, std::int64_t(64 * 2), 60000);
    QTRY_COMPARE_WITH_TIMEOUT(
        doc->plan("data-parallel") ? doc->plan("data-parallel")->summary.devices : 0, 2, 60000);
    QVERIFY(!w.loadMachine("no-such-machine", {}, &error));
    QVERIFY(error.contains("no-such-machine"));
    QCOMPARE(doc->machine()->num_devices(), 2);  // unchanged
  }

  void opensOnnxAndPlanFiles() {
    MainWindow w(false);
    QString error;
    QVERIFY(w.loadMachine("summit", {0, 2}, &error));
    QVERIFY2(w.loadModel(UNITY_TEST_DATA_DIR "/onnx/cnn.onnx", &error), qPrintable(error));
    QCOMPARE(w.document()->modelSpec(), QString(UNITY_TEST_DATA_DIR "/onnx/cnn.onnx"));
    QVERIFY(w.document()->model()->count(OpType::Conv2D) >= 2);
    // A plan file brings its machine and its plan.
    OptimizeOptions o;
    o.mode = "joint";
    const Plan plan =
        optimize_plan(zoo::build("mnist-mlp", 64), load_machine("cpu-local", {0, 2}), o);
    QTemporaryDir dir;
    const QString path = dir.filePath("plan.json");
    write_text_file_atomic(path.toStdString(), plan_to_json(plan).dump());
    QVERIFY2(w.loadModel(path, &error), qPrintable(error));
    const auto loaded = w.document()->plan("joint");
    QVERIFY(loaded);
    QCOMPARE(loaded->pcg.structural_hash(), plan.pcg.structural_hash());
    QCOMPARE(loaded->summary.iteration_time_ms, plan.summary.iteration_time_ms);
    QCOMPARE(w.document()->machine()->num_devices(), 2);
    QCOMPARE(w.document()->machine()->device(0).kind, std::string("cpu"));
    // A bad file is refused with the core's message; the plan stays open.
    QVERIFY(!w.loadModel(UNITY_TEST_DATA_DIR "/onnx/unsupported_ops.onnx", &error));
    QVERIFY2(error.contains("unsupported"), qPrintable(error));
    QCOMPARE(w.document()->modelSpec(), path);
  }

  void droppedOnnxFilesOpen() {
    MainWindow w(false);
    w.show();
    QString error;
    QVERIFY(w.loadMachine("summit", {0, 2}, &error));
    QVERIFY(w.loadModel("mnist-mlp", &error));
    QMimeData data;
    data.setUrls({QUrl::fromLocalFile(UNITY_TEST_DATA_DIR "/onnx/mlp.onnx")});
    QDragEnterEvent enter(QPoint(10, 10), Qt::CopyAction, &data, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(&w, &enter);
    QVERIFY(enter.isAccepted());
    QDropEvent drop(QPointF(10, 10), Qt::CopyAction, &data, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(&w, &drop);
    QTRY_COMPARE_WITH_TIMEOUT(w.document()->modelSpec(),
                              QString(UNITY_TEST_DATA_DIR "/onnx/mlp.onnx"), 30000);
    // Anything but a model is not accepted.
    QMimeData other;
    other.setUrls({QUrl::fromLocalFile(UNITY_TEST_DATA_DIR "/onnx/make_small_models.py")});
    QDragEnterEvent refused(QPoint(10, 10), Qt::CopyAction, &other, Qt::LeftButton, Qt::NoModifier);
    refused.setAccepted(false);
    QApplication::sendEvent(&w, &refused);
    QVERIFY(!refused.isAccepted());
  }

  void shortcutsSwitchViews() {
    MainWindow w(false);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QCOMPARE(MainWindow::viewNames(), (QStringList{"summary", "pcg", "topology", "search",
                                                   "compare", "run", "timeline", "memory"}));
    for (int i = 0; i < MainWindow::viewNames().size(); ++i) {
      QTest::keyClick(&w, Qt::Key(Qt::Key_1 + i), Qt::ControlModifier);
      QCOMPARE(w.currentView(), MainWindow::viewNames()[i]);
    }
    QVERIFY(w.showView("compare"));
    QVERIFY(!w.showView("nope"));
    QCOMPARE(w.currentView(), QString("compare"));
    QVERIFY(w.setCompareModes("data-parallel", "joint"));
    QVERIFY(!w.setCompareModes("joint", "fastest"));
  }

  // File > Export Launch, without its dialogs: the shown plan's (llama-tiny, TP 2 x PP 2)
  // torchtitan TOML and Megatron-LM arguments, as `unity export` writes them; nothing before a
  // plan exists.
  void exportsTheShownPlansLaunch() {
    QTemporaryDir dir;
    MainWindow w(false);
    QString message;
    QVERIFY(!w.exportLaunch("torchtitan", dir.filePath("none.toml"), false, &message));
    QVERIFY2(message.contains("no plan"), qPrintable(message));
    QVERIFY(!QFileInfo::exists(dir.filePath("none.toml")));
    const QString planFile = dir.filePath("tiny.json");
    unity::OptimizeOptions o;
    o.mode = "expert";
    o.layout.tensor_parallel = 2;
    o.layout.pipeline_stages = 2;
    o.layout.micro_batches = 4;
    const unity::MachineSpec m = unity::load_machine("cpu-local", {0, 4});
    const unity::Plan plan =
        unity::optimize_plan(unity::load_model_for_devices("llama-tiny", 4), m, o);
    unity::write_text_file_atomic(planFile.toStdString(), unity::plan_to_json(plan).dump());
    QString error;
    QVERIFY(w.loadMachine("cpu-local", {0, 4}, &error));
    QVERIFY2(w.loadModel(planFile, &error), qPrintable(error));
    QVERIFY(settle(w));
    QCOMPARE(w.document()->bestMode(), QString("expert"));
    const QString args = dir.filePath("tiny.sh");
    QVERIFY2(w.exportLaunch("megatron", args, false, &message), qPrintable(message));
    QVERIFY2(message.contains("Megatron-LM"), qPrintable(message));
    QFile f(args);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QString text = QString::fromUtf8(f.readAll());
    QVERIFY2(text.contains("--tensor-model-parallel-size 2"), qPrintable(text));
    QVERIFY2(text.contains("--pipeline-model-parallel-size 2"), qPrintable(text));
    // torchtitan has no flavour of llama-tiny's shape: refused with the reason, nothing written.
    const QString toml = dir.filePath("tiny.toml");
    QVERIFY(!w.exportLaunch("torchtitan", toml, false, &message));
    QVERIFY2(message.contains("torchtitan cannot run this plan"), qPrintable(message));
    QVERIFY(!QFileInfo::exists(toml));
  }

  // `unity-explorer PLAN.json --view timeline|memory`: a pipelined plan file is shown first (not
  // the faster data-parallel plan computed beside it), by stage in the topology view.
  void aPipelinedPlanFileOpensInTheTimelineAndMemoryViews() {
    QTemporaryDir dir;
    const QString file = dir.filePath("tiny.json");
    unity::OptimizeOptions o;
    o.mode = "expert";
    o.layout.tensor_parallel = 1;
    o.layout.pipeline_stages = 2;
    o.layout.micro_batches = 4;
    const unity::MachineSpec m = unity::load_machine("cpu-local", {0, 4});
    const unity::Plan plan =
        unity::optimize_plan(unity::load_model_for_devices("gpt-tiny", 4), m, o);
    QVERIFY(plan.pipeline);
    unity::write_text_file_atomic(file.toStdString(), unity::plan_to_json(plan).dump());
    MainWindow w(false);
    w.resize(1280, 800);
    QString error;
    QVERIFY(w.loadMachine("cpu-local", {0, 4}, &error));
    QVERIFY2(w.loadModel(file, &error), qPrintable(error));
    QVERIFY(w.showView("timeline"));
    QCOMPARE(w.currentView(), QString("timeline"));
    w.show();
    w.prepareScreenshot("timeline");
    QVERIFY(settle(w));
    QCOMPARE(w.document()->bestMode(), QString("expert"));
    auto* timeline = w.findChild<unity::views::TimelineView*>();
    QVERIFY(timeline);
    QCOMPARE(timeline->predictedChart()->boxCount(), 2 * 4 * 2);
    QVERIFY(w.showView("memory"));
    auto* memory = w.findChild<unity::views::MemoryView*>();
    QCOMPARE(memory->chart()->bars().size(), 2);
    auto* topology = w.findChild<unity::views::TopologyView*>();
    QCOMPARE(topology->heatMap(), unity::views::TopologyView::HeatMap::Stage);
  }

  void aScreenshotRunSettlesOnTheSearchedPlan() {
    MainWindow w(false);
    w.resize(1280, 800);
    QString error;
    QVERIFY(w.loadMachine("summit", {0, 2}, &error));
    QVERIFY(w.loadModel("mnist-mlp", &error));
    QVERIFY(w.showView("topology"));
    w.show();
    w.prepareScreenshot("topology");
    QVERIFY(settle(w));
    QVERIFY(w.document()->plan("joint"));
    const QString selected = w.selectHeaviestOperator();
    QVERIFY(!selected.isEmpty());
    QCOMPARE(w.document()->selectedName(), selected);
    QVERIFY(settle(w));
    auto* topology = w.findChild<unity::views::TopologyView*>();
    QVERIFY(topology);
    QCOMPARE(QString::fromStdString(
                 topology->shownPlan()->pcg.node(topology->selectedOperator()).op.name),
             selected);
    QVERIFY(!topology->highlightedDevices().empty());
    w.updateActivity();
    QCOMPARE(w.activityText(), QString());  // nothing runs any more
    QVERIFY(!w.grab().isNull());
  }

  void projectsSaveAndReopenTheSession() {
    QTemporaryDir dir;
    const QString file = dir.filePath("session.unity");
    QString error;
    {
      MainWindow w(false);
      QVERIFY(w.loadMachine("summit", {0, 2}, &error));
      QVERIFY(w.loadModel("mnist-mlp", &error));
      QVERIFY(settle(w));
      QVERIFY(w.document()->plan("data-parallel"));
      QVERIFY2(w.saveProjectAs(file, &error), qPrintable(error));
      QCOMPARE(w.projectFile(), file);
      QVERIFY(w.windowTitle().contains("session.unity"));
      QVERIFY(!w.saveProjectAs(file, &error));  // never overwritten
      QVERIFY(error.contains("exists"));
      // A search now is recorded in the project.
      w.prepareScreenshot("search");
      QVERIFY(settle(w));
      QVERIFY(w.document()->plan("joint"));
    }
    MainWindow w(false);
    QVERIFY2(w.loadProject(file, false, true, &error), qPrintable(error));
    QCOMPARE(w.currentModel(), QString("mnist-mlp"));
    QCOMPARE(w.document()->machine()->num_devices(), 2);
    QVERIFY(w.document()->plan("joint"));  // the search's plan, from the project
    QVERIFY(w.document()->plan("data-parallel"));
    QVERIFY(!w.loadProject(dir.filePath("missing.unity"), false, true, &error));
    QVERIFY(!QFileInfo::exists(dir.filePath("missing.unity")));
  }

  void theDemoProjectUnpacksAndOpens() {
    unity::explorer::DemoProject demo(/*temporary=*/true);
    QVERIFY2(!demo.path().isEmpty(), qPrintable(demo.error()));
    QVERIFY(QFileInfo(demo.path()).isWritable());  // the explorer records into it
    MainWindow w(false);
    QString error;
    QVERIFY2(w.loadProject(demo.path(), false, true, &error), qPrintable(error));
    QCOMPARE(w.currentModel(), QString("mnist-mlp"));
    for (const char* mode : {"data-parallel", "sequential", "joint"})
      QVERIFY2(w.document()->plan(mode), mode);
    QVERIFY(settle(w));
  }
};

QTEST_MAIN(ExplorerWindowTests)
#include "explorer_window_test.moc"
