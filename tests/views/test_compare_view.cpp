// The compare view on the paper's Figure 1/2 example: sequential (fuse, then data parallel) against
// joint (unfused, reduction-parallel fc1). The diff marks what differs in both drawings, selection
// and zoom follow from one side to the other, and the bars carry the plans' own numbers.
#include <QListWidget>

#include <QSignalSpy>
#include <QtTest>
#include <algorithm>

#include "unity/views/compare_view.h"
#include "unity/views/cost_breakdown_bars.h"
#include "unity/views/graph_canvas.h"
#include "unity/views/plan_diff.h"
#include "view_fixtures.h"
#include "views_test.h"

using namespace unity;
using namespace unity::views;
using namespace unity::views::testing;

namespace {

NodeId named(const Graph& g, const std::string& name) {
  for (const auto& [id, n] : g.nodes())
    if (n.op.name == name) return id;
  return -1;
}

}  // namespace

class CompareViewTests : public QObject {
  Q_OBJECT

 private slots:
  void diffMarksWhatChanged() {
    ExplorerDocument doc;
    openFigure1(doc);
    // Data parallel keeps fc1 and relu1 apart; a plan with the fusion pinned has no relu1.
    const auto dp = makePlan(*doc.model(), *doc.machine(), "data-parallel");
    OptimizeOptions o;
    o.mode = "joint";
    o.pins = {"fuse_linear_relu"};
    const auto fused = std::make_shared<const Plan>(optimize_plan(*doc.model(), *doc.machine(), o));
    QCOMPARE(named(fused->pcg, "relu1"), NodeId(-1));
    const PlanDiff d = diffPlans(*dp, *fused);
    QCOMPARE(d.left.value(named(dp->pcg, "relu1")), NodeMark::OnlyHere);
    QVERIFY(d.lineOf.value("relu1").contains("only in the left plan"));
    QCOMPARE(d.left.value(named(dp->pcg, "fc1")), NodeMark::Changed);  // fused activation
    QCOMPARE(d.right.value(named(fused->pcg, "fc1")), NodeMark::Changed);
    QVERIFY(d.lineOf.value("fc1").startsWith("fc1: "));
    QCOMPARE(d.changed + d.onlyLeft + d.onlyRight, int(d.lines.size()));
    QCOMPARE(d.onlyLeft,
             int(std::count_if(dp->pcg.nodes().begin(), dp->pcg.nodes().end(), [&](const auto& kv) {
               return named(fused->pcg, kv.second.op.name) < 0;
             })));
    // A plan never differs from itself.
    const PlanDiff same = diffPlans(*fused, *fused);
    QVERIFY(same.lines.isEmpty());
    QVERIFY(same.left.isEmpty() && same.right.isEmpty());
  }

  void comparesSequentialWithJoint() {
    ExplorerDocument doc;
    openFigure1(doc);
    CompareView view(&doc);
    view.resize(1280, 800);
    QCOMPARE(view.leftMode(), QString("sequential"));
    QCOMPARE(view.rightMode(), QString("joint"));
    view.show();  // computes the missing plans
    QTRY_VERIFY_WITH_TIMEOUT(doc.plan("sequential") && doc.plan("joint"), 60000);
    QVERIFY(waitForLayout(*view.leftView()));
    QVERIFY(waitForLayout(*view.rightView()));
    QTRY_VERIFY_WITH_TIMEOUT(!view.busy(), 30000);
    const auto seq = doc.plan("sequential");
    const auto joint = doc.plan("joint");
    QCOMPARE(view.leftView()->graph(), &seq->pcg);
    QCOMPARE(view.rightView()->graph(), &joint->pcg);

    // The diff's marks are drawn on both sides, and the list says what differs.
    const PlanDiff expected = diffPlans(*seq, *joint);
    QCOMPARE(view.diff().lines, expected.lines);
    for (GraphView* side : {view.leftView(), view.rightView()}) {
      const auto& marks = side == view.leftView() ? expected.left : expected.right;
      for (auto it = marks.begin(); it != marks.end(); ++it) {
        const QString key = side->display().keyOf.value(it.key());
        if (key.startsWith('n')) QCOMPARE(side->scene()->mark(key), it.value());
      }
    }
    // One line per difference, or one saying there is none.
    QCOMPARE(view.differenceList()->count(), std::max<qsizetype>(view.diff().lines.size(), 1));
    if (expected.lines.isEmpty())
      QCOMPARE(view.differenceList()->item(0)->text(), QString("The two plans are the same."));
    const NodeId fc1Left = view.leftView()->nodeByName("fc1");

    // Bars: the plans' own numbers, and the verdict of the paper's example (joint is faster).
    const auto& m = view.bars()->metrics();
    QCOMPARE(m[0].left, seq->summary.iteration_time_ms);
    QCOMPARE(m[0].right, joint->summary.iteration_time_ms);
    QCOMPARE(m[3].left, seq->summary.communication_bytes);
    QCOMPARE(m[3].right, joint->summary.communication_bytes);
    QCOMPARE(m[4].right, joint->summary.peak_memory_bytes);
    // The joint search starts from the algebraically rewritten model too: never slower here.
    QVERIFY(joint->summary.iteration_time_ms <= seq->summary.iteration_time_ms * (1 + 1e-9));
    if (joint->summary.iteration_time_ms < seq->summary.iteration_time_ms * 0.995)
      QVERIFY2(view.bars()->verdict().startsWith("Joint is"), qPrintable(view.bars()->verdict()));

    // Selection follows from left to right by name, and to the document.
    view.leftView()->selectNode(fc1Left);
    QCOMPARE(view.rightView()->selectedNode(), view.rightView()->nodeByName("fc1"));
    QCOMPARE(doc.selectedName(), QString("fc1"));
    if (expected.lineOf.contains("fc1"))
      QCOMPARE(view.differenceList()->currentItem()->text(), expected.lineOf.value("fc1"));
    view.rightView()->selectNode(view.rightView()->nodeByName("fc2"));
    QCOMPARE(view.leftView()->selectedNode(), view.leftView()->nodeByName("fc2"));

    // Zoom follows.
    view.leftView()->canvas()->setZoom(0.5);
    QCOMPARE(view.rightView()->canvas()->zoom(), 0.5);
    view.rightView()->canvas()->zoomBy(2);
    QCOMPARE(view.leftView()->canvas()->zoom(), 1.0);
  }

  // The plans the compare view computes honour the substitution table's decisions, as the search
  // view's searches do.
  void missingPlansHonourTheTablesDecisions() {
    ExplorerDocument doc;
    openFigure1(doc);
    doc.setDecisions({}, {QStringLiteral("fuse_linear_relu")});
    CompareView view(&doc);
    view.resize(1280, 800);
    view.show();  // computes the missing plans
    QTRY_VERIFY_WITH_TIMEOUT(doc.plan("sequential") && doc.plan("joint"), 60000);
    QTRY_VERIFY_WITH_TIMEOUT(!view.busy(), 30000);
    for (const char* mode : {"sequential", "joint"}) {
      const auto plan = doc.plan(mode);
      QCOMPARE(plan->summary.vetoed, std::vector<std::string>{"fuse_linear_relu"});
      for (const auto& a : plan->summary.substitutions_applied)
        QVERIFY2(a.rule != "fuse_linear_relu", mode);
    }
  }

  void followsTheChosenModes() {
    ExplorerDocument doc;
    openFigure1(doc);
    CompareView view(&doc);
    view.resize(1280, 800);
    view.setModes("data-parallel", "joint");
    view.show();
    QTRY_VERIFY_WITH_TIMEOUT(doc.plan("data-parallel") && doc.plan("joint"), 60000);
    QTRY_VERIFY_WITH_TIMEOUT(!view.busy(), 30000);
    QCOMPARE(view.leftView()->graph(), &doc.plan("data-parallel")->pcg);
    QVERIFY(!doc.plan("sequential"));  // nothing computed that is not shown
  }
};

UNITY_VIEWS_SUITE(CompareViewTests);
#include "test_compare_view.moc"
