// The layout service against real Graphviz: plain structs come back with every node and edge
// placed, the latest request of a client wins, a child-process layout is killed on cancel, bad DOT
// fails with a message. Also the JSON parser on a known Graphviz answer.
#include <QtTest>

#include "unity/core/zoo/model_zoo.h"
#include "unity/views/block_grouping.h"
#include "unity/views/graph_layout.h"
#include "unity/views/layout_service.h"
#include "unity/views/pcg_display.h"
#include "views_test.h"

using namespace unity;
using namespace unity::views;

namespace {

QByteArray dotOf(const Graph& g, bool collapsed) {
  const BlockGrouping blocks = groupBlocks(g);
  DisplayOptions options;
  if (collapsed)
    for (const Block& b : blocks.blocks) options.collapsed.insert(b.name);
  const DisplayGraph d = buildDisplayGraph(g, blocks, options, DisplayFonts::standard());
  return displayToDot(d, blocks, DisplayFonts::standard());
}

// A dense random DAG that takes dot tens of seconds: long enough to be cancelled while it runs.
QByteArray slowDot() {
  QByteArray dot = "digraph slow {\n";
  quint32 state = 1;
  const int n = 1500;
  for (int i = 0; i + 1 < n; ++i)
    for (int k = 0; k < 3; ++k) {
      state = state * 1664525u + 1013904223u;
      const int j = i + 1 + int(state % 200u);
      if (j < n) dot += "n" + QByteArray::number(i) + " -> n" + QByteArray::number(j) + ";\n";
    }
  return dot + "}\n";
}

// What the service reported, received the way views receive it: queued into the GUI thread (a
// QSignalSpy would record on the service's thread, racing with the test).
struct Outcomes : QObject {
  explicit Outcomes(LayoutService* service) {
    connect(service, &LayoutService::layoutReady, this,
            [this](quint64 t, GraphLayoutPtr l) { ready.insert(t, std::move(l)); });
    connect(service, &LayoutService::layoutCancelled, this,
            [this](quint64 t) { cancelled.append(t); });
    connect(service, &LayoutService::layoutFailed, this,
            [this](quint64 t, const QString& m) { failed.insert(t, m); });
  }
  QHash<quint64, GraphLayoutPtr> ready;
  QList<quint64> cancelled;
  QHash<quint64, QString> failed;
};

}  // namespace

class LayoutServiceTests : public QObject {
  Q_OBJECT

 private slots:
  void parsesGraphvizJson() {
    // `echo 'digraph { subgraph cluster_a { label="A"; x; y; } x -> y [id="e0", label="hi"]; }' |
    // dot -Tjson0`
    const QByteArray json =
        R"({"name":"%3","directed":true,"strict":false,"bb":"0,0,86,235","_subgraph_cnt":1,
      "objects":[{"name":"cluster_a","bb":"8,65,78,227","_gvid":0,"nodes":[1,2]},
                 {"_gvid":1,"name":"x","height":"0.5","pos":"43,178","width":"0.75"},
                 {"_gvid":2,"name":"y","height":"0.5","pos":"43,91","width":"0.75"}],
      "edges":[{"_gvid":0,"tail":1,"head":2,"id":"e0","label":"hi","lp":"50,134.5",
                "pos":"e,43,109.18 43,159.8 43,148.16 43,132.55 43,119.24"}]})";
    GraphLayout layout;
    QString error;
    QVERIFY2(parseGraphvizJson(json, &layout, &error), qPrintable(error));
    QCOMPARE(layout.bounds, QRectF(0, 0, 86, 235));
    QCOMPARE(layout.nodes.size(), 2);
    QCOMPARE(layout.nodes[0].name, QString("x"));
    QCOMPARE(layout.nodes[0].center, QPointF(43, 235 - 178));  // y flipped: x is above y
    QCOMPARE(layout.nodes[0].size, QSizeF(54, 36));
    QCOMPARE(layout.clusters.size(), 1);
    QCOMPARE(layout.clusters[0].name, QString("a"));
    QCOMPARE(layout.clusters[0].rect, QRectF(8, 235 - 227, 70, 162));
    QCOMPARE(layout.edges.size(), 1);
    const LayoutEdge& e = layout.edges[0];
    QCOMPARE(e.id, QString("e0"));
    QCOMPARE(e.tail, QString("x"));
    QCOMPARE(e.head, QString("y"));
    QCOMPARE(e.spline.size(), 4);
    QVERIFY(e.hasArrow);
    QCOMPARE(e.arrowTip, QPointF(43, 235 - 109.18));
    QVERIFY(e.hasLabel);
    QCOMPARE(e.labelCenter, QPointF(50, 235 - 134.5));
    QVERIFY(!parseGraphvizJson("{\"objects\": []}", &layout, &error));
    QVERIFY(error.contains("bounding box"));
  }

  void laysOutEveryNodeAndEdgeInProcess() {
    LayoutService service;
    const Graph g = zoo::build("mnist-mlp");
    const BlockGrouping blocks = groupBlocks(g);
    const DisplayGraph d = buildDisplayGraph(g, blocks, {}, DisplayFonts::standard());
    Outcomes outcomes(&service);
    const quint64 ticket = service.request(this, displayToDot(d, blocks, DisplayFonts::standard()),
                                           int(d.nodes.size()));
    QTRY_VERIFY_WITH_TIMEOUT(outcomes.ready.contains(ticket), 20000);
    const GraphLayoutPtr layout = outcomes.ready.value(ticket);
    QVERIFY(layout);
    QVERIFY(layout->ranInProcess);
    QCOMPARE(layout->nodes.size(), d.nodes.size());
    QCOMPARE(layout->edges.size(), d.edges.size());
    QCOMPARE(qsizetype(g.size()), d.nodes.size());  // every node of the small MLP is shown
    for (const DisplayNode& n : d.nodes) {
      const LayoutNode* placed = layout->findNode(n.key);
      QVERIFY2(placed, qPrintable(n.key));
      QVERIFY(layout->bounds.contains(placed->rect().center()));
      // fixedsize boxes: Graphviz keeps the size we measured (to its 1/72 inch grid).
      QVERIFY(std::abs(placed->size.width() - n.size.width()) < 1.0);
    }
    // Data flows downwards: the image input is above the loss.
    QVERIFY(layout->findNode(d.keyOf.value(0))->center.y() <
            layout->findNode(d.nodes.last().key)->center.y());
  }

  void latestRequestWins() {
    LayoutService service;
    const Graph big = zoo::build("inception-v3");
    const Graph small = zoo::build("mnist-mlp");
    Outcomes outcomes(&service);
    const quint64 first = service.request(this, dotOf(big, false), 600);
    const quint64 second = service.request(this, dotOf(big, true), 60);
    const quint64 last = service.request(this, dotOf(small, false), 10);
    QTRY_VERIFY_WITH_TIMEOUT(outcomes.ready.contains(last), 60000);
    // The second was replaced while pending; the first was running (killed, or its in-process
    // result dropped) or pending (dropped): neither reaches the client as a layout.
    QTRY_VERIFY_WITH_TIMEOUT(outcomes.cancelled.contains(first), 60000);
    QVERIFY(outcomes.cancelled.contains(second));
    QVERIFY(!outcomes.ready.contains(first));
    QVERIFY(!outcomes.ready.contains(second));
    QCOMPARE(outcomes.ready.value(last)->nodes.size(), qsizetype(small.size()));
    QVERIFY(!service.busy(this));
  }

  void killsTheDotProcessOnCancel() {
    LayoutService service;
    if (service.dotProgram().isEmpty()) QSKIP("no dot program installed");
    service.setProcessThreshold(0);  // every layout in a child process
    Outcomes outcomes(&service);
    const quint64 ticket = service.request(this, slowDot(), 1500);
    QTRY_VERIFY_WITH_TIMEOUT(service.isRunning(this), 5000);
    service.cancel(this);
    // dot alone would need tens of seconds for this graph: only a killed process ends this soon.
    QTRY_COMPARE_WITH_TIMEOUT(outcomes.cancelled, QList<quint64>{ticket}, 10000);
    QVERIFY(outcomes.ready.isEmpty());
    // The service stays usable: the next request is laid out by dot.
    const quint64 next = service.request(this, dotOf(zoo::build("mnist-mlp"), false), 10);
    QTRY_VERIFY_WITH_TIMEOUT(outcomes.ready.contains(next), 20000);
    QVERIFY(!outcomes.ready.value(next)->ranInProcess);
  }

  void badDotFailsWithAMessage() {
    LayoutService service;
    Outcomes outcomes(&service);
    const quint64 ticket = service.request(this, "digraph { a -> ", 1);
    QTRY_VERIFY_WITH_TIMEOUT(outcomes.failed.contains(ticket), 10000);
    QVERIFY(!outcomes.failed.value(ticket).isEmpty());
    QVERIFY(outcomes.ready.isEmpty());
  }
};

UNITY_VIEWS_SUITE(LayoutServiceTests);
#include "test_layout_service.moc"
