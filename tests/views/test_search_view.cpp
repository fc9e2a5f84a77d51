// The live search: the runner's signals arrive to the end, pause/step/resume/cancel act on the real
// search thread, the substitution table is a well-behaved model whose pins and vetoes change what
// the next search returns, and the GUI thread stays responsive while a search of ResNeXt-50 runs.
#include <QAbstractItemModelTester>
#include <QPushButton>
#include <QSignalSpy>

#include <QTableView>
#include <QtTest>
#include "../../views/src/search_stats_panel.h"

#include "../hand_written_rules.h"
#include "unity/views/graph_view.h"
#include "unity/views/pcg_scene.h"
#include "unity/views/search_runner.h"
#include "unity/views/search_view.h"
#include "unity/views/substitution_model.h"
#include "view_fixtures.h"
#include "views_test.h"

using namespace unity;
using namespace unity::views;
using namespace unity::views::testing;

namespace {

// With the hand-written rules, so that the search runs to completion.
OptimizeOptions joint() {
  OptimizeOptions o;
  o.mode = "joint";
  o.rule_files = hand_written_rule_files();
  return o;
}

}  // namespace

class SearchViewTests : public QObject {
  Q_OBJECT

 private slots:
  void runnerEmitsItsSignalsToTheEnd() {
    ExplorerDocument doc;
    openFigure1(doc);
    SearchRunner runner;
    QSignalSpy started(&runner, &SearchRunner::started);
    QSignalSpy progress(&runner, &SearchRunner::progress);
    QSignalSpy candidates(&runner, &SearchRunner::candidatesCosted);
    QSignalSpy finished(&runner, &SearchRunner::finished);
    QSignalSpy failed(&runner, &SearchRunner::failed);
    QVERIFY(runner.start(doc.model(), doc.machine(), joint()));
    QVERIFY(!runner.start(doc.model(), doc.machine(), joint()));  // one at a time
    QCOMPARE(started.count(), 1);
    QVERIFY(finished.wait(60000));
    QCOMPARE(finished.count(), 1);
    QCOMPARE(failed.count(), 0);
    QCOMPARE(runner.state(), SearchRunner::State::Finished);
    QVERIFY(progress.count() >= 1);
    // Updates are batched: never more progress signals than drains, never a lost candidate.
    QVERIFY(progress.count() <= runner.updatesDelivered() + 1);
    qint64 points = 0;
    for (const auto& args : candidates)
      for (const CandidatePoint& p : args.at(0).value<QList<CandidatePoint>>())
        points += p.repeat ? 0 : 1;
    const auto plan = finished.at(0).at(0).value<std::shared_ptr<const Plan>>();
    QCOMPARE(finished.at(0).at(1).toString(), QString("completed"));
    QCOMPARE(plan->summary.search_status, std::string("completed"));
    const SearchSnapshot last = progress.last().at(0).value<SearchSnapshot>();
    QCOMPARE(last.status, QString("completed"));
    QCOMPARE(last.candidates, plan->summary.candidates_evaluated);
    QCOMPARE(last.bestMs, plan->summary.iteration_time_ms);
    QVERIFY(points >= 1);
    QCOMPARE(points, qint64(runner.points().size()));
    int costed = 0;
    for (const RuleActivity& a : runner.ruleActivity()) costed += a.costed;
    QCOMPARE(qint64(costed), points);
    // The plan is the core's answer for the same input.
    QCOMPARE(plan->summary.iteration_time_ms,
             optimize_plan(*doc.model(), *doc.machine(), joint()).summary.iteration_time_ms);
  }

  // dlrm on 2 Summit nodes (two searches, from the model and from its algebraic rewrites, each
  // naming its phase): the best whole plan so far never rises and ends at the plan's time; while
  // a split graph's piece is searched, the stats panel shows it beside the piece's own best (whose
  // scale differs, and which restarts with each piece).
  void bestWholePlanNeverRisesWhilePiecesAreSearched() {
    ExplorerDocument doc;
    openIn(doc, "dlrm", "summit", {0, 12});
    SearchRunner runner;
    QSignalSpy progress(&runner, &SearchRunner::progress);
    QSignalSpy finished(&runner, &SearchRunner::finished);
    QVERIFY(runner.start(doc.model(), doc.machine(), joint()));
    QVERIFY(finished.wait(120000));
    double previous = 0;
    bool phase = false;
    int bests = 0;
    for (const auto& args : progress) {
      const SearchSnapshot s = args.at(0).value<SearchSnapshot>();
      phase = phase || !s.phase.isEmpty();
      if (s.planBestMs <= 0) continue;
      if (previous > 0)
        QVERIFY2(s.planBestMs <= previous, qPrintable(QString::number(s.planBestMs)));
      previous = s.planBestMs;
      ++bests;
    }
    QVERIFY(bests >= 2);
    QVERIFY(phase);
    const auto plan = finished.at(0).at(0).value<std::shared_ptr<const Plan>>();
    QCOMPARE(runner.snapshot().planBestMs, plan->summary.iteration_time_ms);
    SearchStatsPanel panel;
    SearchSnapshot mid = runner.snapshot();
    mid.status.clear();
    mid.segment = 1;
    mid.segments = 3;
    mid.bestMs = 11.6;
    panel.setSnapshot(mid);
    QVERIFY2(panel.text().contains(QStringLiteral("(this piece) · best whole plan so far")),
             qPrintable(panel.text()));
    QVERIFY2(panel.text().contains(mid.phase), qPrintable(panel.text()));
  }

  void stepFromTheStartThenCancel() {
    ExplorerDocument doc;
    openIn(doc, "resnext50", "summit", {0, 2});
    SearchRunner runner;
    QSignalSpy paused(&runner, &SearchRunner::pausedAt);
    QSignalSpy finished(&runner, &SearchRunner::finished);
    QVERIFY(runner.start(doc.model(), doc.machine(), joint(), /*paused=*/true));
    QVERIFY(paused.wait(60000));  // held at its first event
    QCOMPARE(runner.state(), SearchRunner::State::Paused);
    const qint64 held = runner.snapshot().candidates;
    QTest::qWait(300);  // the search thread is blocked: nothing moves
    QCOMPARE(runner.snapshot().candidates, held);
    // Each step costs exactly one more candidate, then holds again.
    for (int i = 0; i < 2; ++i) {
      const int costed = int(runner.points().size());
      runner.step();
      QVERIFY(paused.wait(60000));
      QCOMPARE(runner.state(), SearchRunner::State::Paused);
      QCOMPARE(int(runner.points().size()), costed + 1);
      QVERIFY(!paused.last().at(0).value<SearchSnapshot>().rule.isEmpty());
    }
    QVERIFY(finished.isEmpty());
    // Cancel releases the held search, which returns its best plan so far.
    runner.cancel();
    QVERIFY(finished.wait(120000));
    QCOMPARE(finished.last().at(1).toString(), QString("cancelled"));
    QVERIFY(runner.plan()->summary.iteration_time_ms > 0);
  }

  void pauseAndResumeARunningSearch() {
    ExplorerDocument doc;
    openIn(doc, "resnext50", "summit", {0, 2});
    SearchRunner runner;
    QSignalSpy paused(&runner, &SearchRunner::pausedAt);
    QSignalSpy resumed(&runner, &SearchRunner::resumed);
    QSignalSpy finished(&runner, &SearchRunner::finished);
    QVERIFY(runner.start(doc.model(), doc.machine(), joint()));
    runner.pause();
    QVERIFY(paused.wait(60000));
    QCOMPARE(runner.state(), SearchRunner::State::Paused);
    runner.resume();
    QCOMPARE(resumed.count(), 1);
    QCOMPARE(runner.state(), SearchRunner::State::Running);
    QVERIFY(finished.wait(120000));
    QVERIFY(finished.last().at(1).toString() != QString("cancelled"));
  }

  void substitutionModelPassesTheTester() {
    SubstitutionModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setRules(default_rules());
    QCOMPARE(model.rowCount(), int(default_rules().rules.size()));
    for (int row = 0; row < model.rowCount(); ++row)
      QCOMPARE(model.decision(row), SubstitutionModel::Decision::Neutral);
    QSignalSpy changed(&model, &SubstitutionModel::decisionsChanged);
    const int fuse = model.rowOf("fuse_linear_relu");
    QVERIFY(model.setData(model.index(fuse, SubstitutionModel::DecisionColumn), "pin"));
    QVERIFY(model.setData(
        model.index(model.rowOf("linear_output_parallel"), SubstitutionModel::DecisionColumn),
        int(SubstitutionModel::Decision::Veto), SubstitutionModel::DecisionRole));
    QVERIFY(!model.setData(model.index(fuse, SubstitutionModel::DecisionColumn), "maybe"));
    QVERIFY(!model.setData(model.index(fuse, SubstitutionModel::RuleColumn), "pin"));
    QVERIFY(model.flags(model.index(fuse, SubstitutionModel::DecisionColumn)) & Qt::ItemIsEditable);
    QVERIFY(!(model.flags(model.index(fuse, SubstitutionModel::RuleColumn)) & Qt::ItemIsEditable));
    QCOMPARE(changed.count(), 2);
    QCOMPARE(model.pins(), QStringList{"fuse_linear_relu"});
    QCOMPARE(model.vetoes(), QStringList{"linear_output_parallel"});
    QCOMPARE(model.index(fuse, 0).data().toString(), QString("pin"));
    // A rule at one node: its own row after the rule's, in the RULE@NODE form the core takes.
    const int at = model.addLocation("linear_sample_parallel", "fc2");
    QCOMPARE(at, model.rowOf("linear_sample_parallel") + 1);
    QCOMPARE(model.addLocation("linear_sample_parallel", "fc2"), at);
    QCOMPARE(model.addLocation("no_such_rule", "fc2"), -1);
    model.setDecision(at, SubstitutionModel::Decision::Veto);
    // Row order: linear_sample_parallel's rows come before linear_output_parallel's
    // (rules/dense.json).
    QVERIFY(model.rowOf("linear_sample_parallel") < model.rowOf("linear_output_parallel"));
    QCOMPARE(model.vetoes(), (QStringList{"linear_sample_parallel@fc2", "linear_output_parallel"}));
    QCOMPARE(model.index(at, SubstitutionModel::WhereColumn).data().toString(), QString("at fc2"));
    QVERIFY(!model.removeLocation(model.rowOf("fuse_linear_relu")));  // rule rows stay
    QVERIFY(model.removeLocation(at));
    QCOMPARE(model.vetoes(), QStringList{"linear_output_parallel"});
    model.setMatchCounts({{"fuse_linear_relu", 1}});
    QCOMPARE(model.index(fuse, SubstitutionModel::MatchesColumn).data().toInt(), 1);
    model.setActivity({{"fuse_linear_relu", RuleActivity{5, 2}}});
    QCOMPARE(model.index(fuse, SubstitutionModel::CostedColumn).data().toInt(), 5);
    QCOMPARE(model.index(fuse, SubstitutionModel::ImprovedColumn).data().toInt(), 2);
    model.resetDecisions();
    QVERIFY(model.pins().isEmpty() && model.vetoes().isEmpty());
    model.setRules(RuleSet{});
    QCOMPARE(model.rowCount(), 0);
  }

  void pinAndVetoChangeWhatTheNextSearchReturns() {
    ExplorerDocument doc;
    openFigure1(doc);
    SearchView view(&doc);
    view.resize(1280, 800);
    view.show();
    QTRY_VERIFY_WITH_TIMEOUT(view.matchCountsReady(), 30000);
    SubstitutionModel* table = view.substitutions();
    // fc1 -> relu1 is the one Linear+ReLU pair of the model.
    QCOMPARE(table->index(table->rowOf("fuse_linear_relu"), SubstitutionModel::MatchesColumn)
                 .data()
                 .toInt(),
             1);
    QSignalSpy finished(&view, &SearchView::searchFinished);

    // Neutral everywhere: the search rewrites the model somehow.
    QTest::mouseClick(view.button("search"), Qt::LeftButton);
    QVERIFY(finished.wait(60000));
    const auto free = doc.plan("joint");
    QVERIFY(free);
    QVERIFY(!free->summary.substitutions_applied.empty());
    QStringList used;
    for (const auto& a : free->summary.substitutions_applied)
      used << QString::fromStdString(a.rule);
    used.removeDuplicates();
    const int firstRow = table->rowOf(used.first());
    QVERIFY(table->index(firstRow, SubstitutionModel::AppliedColumn).data().toInt() >= 1);
    QVERIFY(table->index(firstRow, SubstitutionModel::CostedColumn).data().toInt() >= 1);

    // Veto every rule it used: the re-run must do without them.
    for (const QString& rule : used) table->setData(table->index(table->rowOf(rule), 0), "veto");
    QTest::mouseClick(view.button("search"), Qt::LeftButton);
    QVERIFY(finished.wait(60000));
    const auto vetoed = doc.plan("joint");
    QVERIFY(vetoed != free);
    for (const auto& a : vetoed->summary.substitutions_applied)
      QVERIFY2(!used.contains(QString::fromStdString(a.rule)), a.rule.c_str());
    QCOMPARE(int(vetoed->summary.vetoed.size()), int(used.size()));

    // Pin the fusion at fc1 (a RULE@NODE row): the next plan fuses there, whatever it costs.
    table->resetDecisions();
    const int at = table->addLocation("fuse_linear_relu", "fc1");
    QVERIFY(at >= 0);
    QTRY_COMPARE_WITH_TIMEOUT(table->index(at, SubstitutionModel::MatchesColumn).data().toInt(), 1,
                              5000);
    table->setData(table->index(at, 0), "pin");
    QCOMPARE(table->pins(), QStringList{"fuse_linear_relu@fc1"});
    QTest::mouseClick(view.button("search"), Qt::LeftButton);
    QVERIFY(finished.wait(60000));
    const auto pinned = doc.plan("joint");
    bool fused = false;
    for (const auto& a : pinned->summary.substitutions_applied)
      if (a.rule == "fuse_linear_relu") {
        fused = true;
        QVERIFY(a.pinned);
        QVERIFY(std::find(a.nodes.begin(), a.nodes.end(), "fc1") != a.nodes.end());
      }
    QVERIFY(fused);
    QCOMPARE(pinned->pcg.count(OpType::Relu), 0);
    QCOMPARE(table->index(at, SubstitutionModel::AppliedColumn).data().toInt(), 1);
  }

  void candidatesGlowOnTheFixedLayout() {
    ExplorerDocument doc;
    openFigure1(doc);
    SearchView view(&doc);
    view.resize(1280, 800);
    view.show();
    QVERIFY(waitForLayout(*view.graphView()));
    const GraphLayoutPtr base =
        std::shared_ptr<const GraphLayout>(view.graphView()->layout(), [](const GraphLayout*) {});
    const QRectF before = view.graphView()->scene()->sceneRect();
    SearchRunner* runner = view.runner();
    QSignalSpy paused(runner, &SearchRunner::pausedAt);
    QVERIFY(view.startSearch(/*paused=*/true));
    QVERIFY(paused.wait(60000));
    runner->step();  // to the first candidate
    QVERIFY(paused.wait(60000));
    // Paused on a candidate: its rewritten nodes glow until resumed; the layout did not change.
    const SearchSnapshot s = runner->snapshot();
    QVERIFY(!s.matchedNames.isEmpty());
    const QSet<QString> glowing = view.graphView()->scene()->highlightedKeys();
    QVERIFY(!glowing.isEmpty());
    for (const QString& name : s.matchedNames) {
      const NodeId id = view.graphView()->nodeByName(name);
      if (id >= 0) QVERIFY(glowing.contains(view.graphView()->display().keyOf.value(id)));
    }
    QVERIFY(!view.graphView()->layoutPending());
    QCOMPARE(view.graphView()->scene()->sceneRect(), before);
    QVERIFY(view.button("step")->isEnabled());
    QVERIFY(!view.button("pause")->isEnabled());
    runner->resume();
    QVERIFY(runner->waitForFinished(60000));
    QVERIFY(view.button("search")->isEnabled());
    QCOMPARE(view.graphView()->scene()->sceneRect(), before);
  }

  // A search of ResNeXt-50 on two nodes (the screenshot's), with the search view drawing every
  // update: the updates come in batches. The GUI thread's worst lateness is logged.
  void guiStaysResponsiveDuringASearch() {
    ExplorerDocument doc;
    openIn(doc, "resnext50", "summit", {2, 0});
    SearchView view(&doc);
    view.resize(1280, 800);
    view.show();
    QVERIFY(waitForLayout(*view.graphView()));
    LatenessProbe probe;
    probe.start();
    QSignalSpy finished(&view, &SearchView::searchFinished);
    QVERIFY(view.startSearch());
    QVERIFY(finished.wait(240000));
    QTest::qWait(100);
    probe.stop();
    // Every costed candidate reaches the view, in batches: fewer updates than candidates, so
    // drawing never falls behind the search. (The timer's lateness is logged, not asserted.)
    const auto candidates = view.runner()->plan()->summary.candidates_evaluated;
    QVERIFY(view.runner()->updatesDelivered() >= 1);
    QVERIFY2(view.runner()->updatesDelivered() < candidates,
             qPrintable(QString("%1 updates for %2 candidates")
                            .arg(view.runner()->updatesDelivered())
                            .arg(candidates)));
    qInfo("resnext50 search: %s, %d updates", qPrintable(probe.report()),
          view.runner()->updatesDelivered());
  }
};

UNITY_VIEWS_SUITE(SearchViewTests);
#include "test_search_view.moc"
