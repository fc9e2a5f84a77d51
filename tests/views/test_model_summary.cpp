// libunity_views against real graphs: counts must equal what the core says, models must satisfy
// QAbstractItemModelTester, widgets must show what they were given.
#include <QAbstractItemModelTester>
#include <QLocale>
#include <QTableView>
#include <QtTest>

#include <set>

#include "unity/core/pcg/graph_builder.h"
#include "unity/core/zoo/model_zoo.h"
#include "unity/views/model_summary_view.h"
#include "unity/views/op_count_model.h"
#include "unity/views/tensor_table_model.h"
#include "views_test.h"

using unity::Graph;
using unity::GraphBuilder;
using unity::OpType;
using unity::views::ModelSummaryView;
using unity::views::OpCountModel;
using unity::views::TensorTableModel;

namespace {

// Input 1, Weight 2, MatMul 2, Relu 2, Add 1, Partition 1: six distinct types, two of them
// parallel/source.
Graph smallGraph() {
  Graph g;
  g.name = "tiny";
  g.batch_size = 8;
  GraphBuilder b(g);
  auto x = b.input("x", {8, 16});
  auto h = b.relu(b.matmul(x, b.weight("w1", {16, 32}), "mm1"), "r1");
  auto y = b.relu(b.matmul(h, b.weight("w2", {32, 4}), "mm2"), "r2");
  b.partition(b.add(y, y, "sum"), 0, 2, "part");
  return g;
}

}  // namespace

class ModelSummaryTests : public QObject {
  Q_OBJECT

 private slots:
  void opCountModelCountsEachType() {
    const Graph g = smallGraph();
    OpCountModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setGraph(g);

    QCOMPARE(model.rowCount(), 6);
    QCOMPARE(model.columnCount(), int(OpCountModel::ColumnCount));
    qint64 total = 0;
    for (int row = 0; row < model.rowCount(); ++row) {
      const auto type = OpType(model.data(model.index(row, 0), OpCountModel::OpTypeRole).toInt());
      const qint64 count = model.data(model.index(row, OpCountModel::CountColumn)).toLongLong();
      QCOMPARE(count, qint64(g.count(type)));
      total += count;
    }
    QCOMPARE(total, qint64(g.size()));
    QCOMPARE(model.countOf(OpType::MatMul), 2);
    QCOMPARE(model.countOf(OpType::Partition), 1);
    QCOMPARE(model.countOf(OpType::Conv2D), 0);
  }

  void opCountModelSortsByCountThenType() {
    OpCountModel model;
    model.setGraph(smallGraph());
    QStringList names;
    for (int row = 0; row < model.rowCount(); ++row) names << model.index(row, 0).data().toString();
    QCOMPARE(names, (QStringList{"Weight", "MatMul", "Relu", "Input", "Add", "Partition"}));
    QCOMPARE(model.index(5, OpCountModel::CategoryColumn).data().toString(), QString("parallel"));
    QCOMPARE(model.index(1, OpCountModel::CategoryColumn).data().toString(), QString("compute"));
    QCOMPARE(model.index(0, OpCountModel::CategoryColumn).data().toString(), QString("source"));
  }

  void opCountModelFollowsAZooModel() {
    const Graph g = unity::zoo::build("mnist-mlp");
    OpCountModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setGraph(smallGraph());
    model.setGraph(g);  // a second reset, checked by the tester
    std::set<OpType> distinct;
    for (const auto& [id, node] : g.nodes()) distinct.insert(node.op.type);
    QCOMPARE(model.rowCount(), int(distinct.size()));
    for (OpType t : distinct) QCOMPARE(model.countOf(t), qint64(g.count(t)));
    model.clear();
    QCOMPARE(model.rowCount(), 0);
  }

  void tensorTableListsInputsWeightsAndOutputs() {
    const Graph g = smallGraph();
    TensorTableModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setGraph(g);
    using Kind = TensorTableModel::Kind;
    QCOMPARE(model.count(Kind::Input), 1);
    QCOMPARE(model.count(Kind::Weight), 2);
    QCOMPARE(model.count(Kind::Output), 1);  // only the Partition's result is unconsumed
    QCOMPARE(model.rowCount(), 4);
    QCOMPARE(model.index(0, TensorTableModel::NameColumn).data().toString(), QString("x"));
    QCOMPARE(model.index(1, TensorTableModel::NameColumn).data().toString(), QString("w1"));
    QCOMPARE(model.index(1, TensorTableModel::ElementsColumn).data().toLongLong(), 16 * 32);
    QCOMPARE(model.index(1, TensorTableModel::BytesColumn).data().toLongLong(), 16 * 32 * 4);
    QCOMPARE(model.index(3, TensorTableModel::KindColumn).data().toString(), QString("output"));
    QCOMPARE(model.index(3, TensorTableModel::NameColumn).data().toString(), QString("part"));
    // The output is partitioned 2 ways along the batch: the shape must say so.
    QCOMPARE(model.index(3, TensorTableModel::ShapeColumn).data().toString(),
             QString::fromStdString(g.shape(model.entries().at(3).tensor).to_string()));
    QVERIFY(model.index(3, TensorTableModel::ShapeColumn).data().toString().startsWith("[8/2, 4]"));
    qint64 weightElements = 0;
    for (const auto& e : model.entries()) weightElements += e.kind == Kind::Weight ? e.elements : 0;
    QCOMPARE(weightElements, qint64(g.parameter_count()));
    model.clear();
    QCOMPARE(model.rowCount(), 0);
  }

  void summaryViewShowsTheGraph() {
    const Graph g = smallGraph();
    ModelSummaryView view;
    view.resize(640, 400);
    view.show();
    QVERIFY(!view.table()->isEnabled());
    view.setGraph(g);
    QCOMPARE(view.title(), QString("tiny"));
    const QLocale locale;
    // 6 operators: MatMul x2, Relu x2, Add (compute) and Partition (parallel).
    QVERIFY2(view.statistics().startsWith("6 operators (5 compute, 1 parallel)"),
             qPrintable(view.statistics()));
    QVERIFY2(
        view.statistics().contains(locale.toString(qint64(g.parameter_count())) + " parameters"),
        qPrintable(view.statistics()));
    QVERIFY2(view.statistics().contains("batch 8 per device"), qPrintable(view.statistics()));
    view.setGraph(g, 2);  // the same graph as the global batch of two devices
    QVERIFY2(view.statistics().contains("batch 8 (4 per device on 2 devices)"),
             qPrintable(view.statistics()));
    QVERIFY(view.table()->isEnabled());
    QCOMPARE(view.table()->model()->rowCount(), 6);
    QCOMPARE(view.tensorTable()->model()->rowCount(), 4);
    view.clear();
    QCOMPARE(view.table()->model()->rowCount(), 0);
    QCOMPARE(view.tensorTable()->model()->rowCount(), 0);
    QCOMPARE(view.title(), QString("No model loaded"));
  }
};

UNITY_VIEWS_SUITE(ModelSummaryTests);
#include "test_model_summary.moc"
