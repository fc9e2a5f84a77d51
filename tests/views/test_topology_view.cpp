// The topology view: the machine's devices and links as the presets describe them, routes over the
// right link classes, a heat map equal to the plan's memory and load, and the selection (here or in
// the PCG view) highlighting the operator's devices and links.
#include <QAbstractItemModelTester>
#include <QTableView>
#include <QtTest>

#include "unity/views/graph_view.h"
#include "unity/views/operator_table_model.h"
#include "unity/views/pcg_view.h"
#include "unity/views/topology_layout.h"
#include "unity/views/topology_view.h"
#include "view_fixtures.h"
#include "views_test.h"

using namespace unity;
using namespace unity::views;
using namespace unity::views::testing;

namespace {

int countLinks(const TopologyLayout& t, TopologyLink::Kind kind) {
  int n = 0;
  for (const TopologyLink& l : t.links) n += l.kind == kind ? 1 : 0;
  return n;
}

std::set<TopologyLink::Kind> kindsOf(const TopologyLayout& t, const std::set<int>& links) {
  std::set<TopologyLink::Kind> out;
  for (int l : links) out.insert(t.links[l].kind);
  return out;
}

}  // namespace

class TopologyViewTests : public QObject {
  Q_OBJECT

 private slots:
  void laysOutSummitNodes() {
    const MachineSpec summit = load_machine("summit", {2, 0});
    const TopologyLayout t = layOutTopology(summit);
    QCOMPARE(t.devices.size(), 12);
    QCOMPARE(t.nodes.size(), 2);
    QCOMPARE(t.islands.size(), 4);  // two sockets of three NVLink-connected V100s per node
    QCOMPARE(countLinks(t, TopologyLink::Kind::IntraIsland), 4 * 3);  // every pair of an island
    QCOMPARE(countLinks(t, TopologyLink::Kind::InterIsland), 2);      // X-Bus, one per node
    QCOMPARE(countLinks(t, TopologyLink::Kind::InterNode), 2);        // each node's uplink
    QVERIFY(!t.networkSwitch.isEmpty());
    for (const TopologyDevice& d : t.devices) {
      QCOMPARE(d.node, summit.node_of(d.index));
      QCOMPARE(d.island, summit.island_of(d.index));
      QVERIFY(t.islands[d.island].rect.contains(d.rect));
      QVERIFY(t.nodes[d.node].rect.contains(d.rect));
      for (const TopologyDevice& e : t.devices)
        if (e.index != d.index) QVERIFY(!d.rect.intersects(e.rect));
    }
    // Routes take the link class the machine model charges.
    QCOMPARE(kindsOf(t, t.route(summit, 0, 1)), std::set{TopologyLink::Kind::IntraIsland});
    QCOMPARE(t.route(summit, 0, 2).size(), size_t(1));  // direct NVLink, drawn as an arc
    QCOMPARE(kindsOf(t, t.route(summit, 0, 4)), std::set{TopologyLink::Kind::InterIsland});
    QCOMPARE(kindsOf(t, t.route(summit, 1, 7)), std::set{TopologyLink::Kind::InterNode});
    QCOMPARE(t.route(summit, 1, 7).size(), size_t(2));  // up from node 0, down to node 1
    QVERIFY(t.route(summit, 3, 3).empty());
    // One DGX node: eight GPUs on one NVSwitch, drawn as ports on a switch.
    const MachineSpec dgx = load_machine("dgx-a100", {});
    const TopologyLayout d = layOutTopology(dgx);
    QCOMPARE(d.devices.size(), 8);
    QCOMPARE(countLinks(d, TopologyLink::Kind::IntraIsland), 8);
    QVERIFY(!d.islandSwitches.value(0).isEmpty());
    QCOMPARE(d.route(dgx, 2, 5).size(), size_t(2));
    QVERIFY(d.networkSwitch.isEmpty());
  }

  // A GB200 NVL72 rack: 72 GPUs on one NVLink switch, drawn in rows of 12 whose ports run down the
  // gaps between devices, not across them.
  void wrapsAWideNvlinkDomainIntoRows() {
    const MachineSpec rack = load_machine("gb200-nvl72", {});
    const TopologyLayout t = layOutTopology(rack);
    QCOMPARE(t.devices.size(), 72);
    std::set<double> rowTops;
    for (const TopologyDevice& d : t.devices) {
      rowTops.insert(d.rect.top());
      QVERIFY(t.islands[0].rect.contains(d.rect));
      for (const TopologyDevice& e : t.devices)
        if (e.index != d.index) QVERIFY(!d.rect.intersects(e.rect));
    }
    QCOMPARE(rowTops.size(), size_t(6));
    const QRectF sw = t.islandSwitches.value(0);
    QVERIFY(sw.top() > t.devices.last().rect.bottom());
    QCOMPARE(countLinks(t, TopologyLink::Kind::IntraIsland), 72);
    for (const TopologyLink& l : t.links)
      for (const TopologyDevice& d : t.devices)
        if (l.a != d.index)  // a port may touch its own device only
          QVERIFY(!l.path.intersects(d.rect.adjusted(1, 1, -1, -1)));
  }

  void heatMapIsThePlansMemoryAndLoad() {
    ExplorerDocument doc;
    openIn(doc, "mnist-mlp", "summit", {0, 2});
    const auto plan = makePlan(*doc.model(), *doc.machine(), "data-parallel");
    doc.setPlan("data-parallel", plan);
    TopologyView view(&doc);
    view.resize(1200, 700);
    view.show();
    QCOMPARE(view.shownPlan(), plan);
    QCOMPARE(view.operatorModel()->rowCount(), int(plan->mapping.per_op.size()));
    QCOMPARE(view.heat().size(), 2);
    for (int d = 0; d < 2; ++d)
      QCOMPARE(view.heat()[d], plan->mapping.memory_per_device[size_t(d)] /
                                   double(plan->machine.device(d).memory_bytes));
    view.setHeatMap(TopologyView::HeatMap::Load);
    double busy0 = 0;
    for (const OpCost& c : plan->mapping.per_op)
      for (int dev : c.view.devices()) busy0 += dev == 0 ? c.forward + c.backward : 0;
    QCOMPARE(view.busySecondsPerDevice()[0], busy0);
    QCOMPARE(view.heat()[0], 1.0);  // data parallel: both GPUs equally busy
    QCOMPARE(view.heat()[1], 1.0);
  }

  void selectionHighlightsDevicesAndLinks() {
    ExplorerDocument doc;
    openIn(doc, "mnist-mlp", "summit", {0, 2});
    const auto plan = makePlan(*doc.model(), *doc.machine(), "data-parallel");
    doc.setPlan("data-parallel", plan);
    TopologyView topology(&doc);
    PcgView pcg(&doc);
    topology.resize(1200, 700);
    pcg.resize(1200, 700);
    topology.show();
    pcg.show();
    QVERIFY(waitForLayout(*pcg.graphView()));
    // Selecting fc1 in the PCG view highlights both GPUs and the NVLink between them in the
    // topology view: data parallelism all-reduces fc1's weight gradients over them.
    pcg.graphView()->selectNode(pcg.graphView()->nodeByName("fc1"));
    QCOMPARE(doc.selectedName(), QString("fc1"));
    const NodeId fc1 = topology.selectedOperator();
    QCOMPARE(QString::fromStdString(plan->pcg.node(fc1).op.name), QString("fc1"));
    QCOMPARE(topology.highlightedDevices(), (std::set<int>{0, 1}));
    QCOMPARE(topology.highlightedLinks(), topology.topology().route(plan->machine, 0, 1));
    QVERIFY(topology.selectionText().contains("crosses"));
    // The operator table follows, and selecting a row there goes back to the document.
    const QModelIndex current = topology.operatorTable()->currentIndex();
    QCOMPARE(current.data(OperatorTableModel::NodeIdRole).toLongLong(), fc1);
    const int lossRow = topology.operatorModel()->rowOf(pcg.graphView()->nodeByName("loss"));
    QVERIFY(lossRow >= 0);
    topology.operatorTable()->setCurrentIndex(topology.operatorTable()->model()->index(lossRow, 0));
    QCOMPARE(doc.selectedName(), QString("loss"));
    QCOMPARE(pcg.graphView()->selectedNode(), pcg.graphView()->nodeByName("loss"));
    // Clearing the selection clears the highlight.
    doc.setSelectedName(QString());
    QCOMPARE(topology.selectedOperator(), NodeId(-1));
    QVERIFY(topology.highlightedDevices().empty());
    QVERIFY(topology.highlightedLinks().empty());
  }

  void crossNodeTrafficUsesTheNetwork() {
    ExplorerDocument doc;
    openIn(doc, "mnist-mlp", "summit", {2, 0});
    const auto plan = makePlan(*doc.model(), *doc.machine(), "data-parallel");
    doc.setPlan("data-parallel", plan);
    TopologyView topology(&doc);
    topology.show();
    doc.setSelectedName("fc2");
    QCOMPARE(topology.highlightedDevices().size(), size_t(12));
    const auto kinds = kindsOf(topology.topology(), topology.highlightedLinks());
    QVERIFY(kinds.count(TopologyLink::Kind::InterNode));  // the ring crosses InfiniBand
    QVERIFY(kinds.count(TopologyLink::Kind::IntraIsland));
  }

  void operatorModelPassesTheTester() {
    ExplorerDocument doc;
    openIn(doc, "mnist-mlp", "cpu-local", {0, 2});
    OperatorTableModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setPlan(makePlan(*doc.model(), *doc.machine(), "data-parallel"));
    QVERIFY(model.rowCount() > 0);
    model.setPlan(nullptr);
    QCOMPARE(model.rowCount(), 0);
  }
};

UNITY_VIEWS_SUITE(TopologyViewTests);
#include "test_topology_view.moc"
