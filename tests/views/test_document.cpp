// The explorer document that ties the views together, and the run view that for now only names the
// plan a run would use (no invented numbers).
#include <QSignalSpy>
#include <QtTest>

#include "unity/views/display_format.h"
#include "unity/views/explorer_document.h"
#include "unity/views/run_view.h"
#include "view_fixtures.h"
#include "views_test.h"

using namespace unity;
using namespace unity::views;
using namespace unity::views::testing;

class DocumentTests : public QObject {
  Q_OBJECT

 private slots:
  void plansBelongToTheirModelAndMachine() {
    ExplorerDocument doc;
    QSignalSpy plans(&doc, &ExplorerDocument::planChanged);
    QSignalSpy selection(&doc, &ExplorerDocument::selectionChanged);
    openIn(doc, "mnist-mlp", "summit", {0, 2});
    QVERIFY(doc.planModes().isEmpty());
    QCOMPARE(doc.bestMode(), QString());
    const auto dp = makePlan(*doc.model(), *doc.machine(), "data-parallel");
    const auto joint = makePlan(*doc.model(), *doc.machine(), "joint");
    doc.setPlan("joint", joint);
    doc.setPlan("data-parallel", dp);
    QCOMPARE(doc.planModes(), (QStringList{"data-parallel", "joint"}));  // in modes() order
    // The fastest plan is shown by default; on a tie the joint search's.
    QCOMPARE(doc.bestMode(), joint->summary.iteration_time_ms <= dp->summary.iteration_time_ms
                                 ? QString("joint")
                                 : QString("data-parallel"));
    doc.setSelectedName("fc1");
    doc.setSelectedName("fc1");      // no signal for no change
    QCOMPARE(selection.count(), 2);  // setModel's clear, then fc1
    // Another machine drops the plans (they were found for the old one), keeps the selection.
    const quint64 generation = doc.generation();
    doc.setMachine(std::make_shared<const MachineSpec>(load_machine("summit", {0, 4})), "summit",
                   {0, 4});
    QVERIFY(doc.planModes().isEmpty());
    QVERIFY(doc.generation() > generation);
    QCOMPARE(plans.last().at(0).toString(), QString());
    QCOMPARE(doc.selectedName(), QString("fc1"));
    QCOMPARE(doc.machineDescription(), QString("summit · 4 × NVIDIA V100-SXM2-16GB"));
    doc.setMachine(std::make_shared<const MachineSpec>(load_machine("summit", {2, 0})), "summit",
                   {2, 0});
    QCOMPARE(doc.machineDescription(),
             QString("summit · 2 nodes × 6 NVIDIA V100-SXM2-16GB (12 GPUs)"));
    // Another model clears the selection too.
    doc.setModel(std::make_shared<const Graph>(zoo::build("mlp")), "mlp");
    QCOMPARE(doc.selectedName(), QString());
  }

  void runViewNamesThePlanAndInventsNothing() {
    ExplorerDocument doc;
    RunView view(&doc);
    QVERIFY(view.planText().contains("Open a model"));
    QVERIFY(!view.planText().contains(" ms"));  // no plan, no numbers
    QVERIFY(view.resultText().isEmpty());
    openIn(doc, "mnist-mlp", "summit", {0, 2});
    const auto dp = makePlan(*doc.model(), *doc.machine(), "data-parallel");
    doc.setPlan("data-parallel", dp);
    QVERIFY(view.planText().contains(formatMs(dp->summary.iteration_time_ms)));
    QVERIFY(view.planText().contains("2 devices"));
    QVERIFY(view.resultText().isEmpty());  // nothing measured before a run
  }

  void formatsNumbersForPeople() {
    QCOMPARE(formatMs(258.255), QString("258.3 ms"));
    QCOMPARE(formatMs(0.0853), QString("0.085 ms"));
    QCOMPARE(formatMs(2804.45), QString("2.80 s"));
    QCOMPARE(formatBytes(2.0 * 1024 * 1024 * 1024), QString("2.00 GiB"));
    QCOMPARE(formatBytes(10240), QString("10.0 KiB"));
    QCOMPARE(formatBytes(512), QString("512 B"));
    QCOMPARE(formatBandwidth(50e9), QString("50 GB/s"));
    QCOMPARE(formatDevices({3, 0, 1, 2, 5, 7, 6}), QString("0–3, 5–7"));
    QCOMPARE(formatDevices({4, 0, 1, 1}), QString("0, 1, 4"));  // runs of two stay a list
    QCOMPARE(formatShape(ParallelTensorShape{{{64, 2}, {784, 1}}, 2, DataType::Float32}),
             QString("[64/2, 784] r2"));
    QCOMPARE(formatShape(ParallelTensorShape::serial({128}, DataType::Int64)),
             QString("[128] int64"));
  }
};

UNITY_VIEWS_SUITE(DocumentTests);
#include "test_document.moc"
