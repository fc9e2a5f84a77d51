// Project files in the explorer: a search of the search view is recorded with every event and its
// plan, a recorded search replays into the same chart and plan, the table's pins and vetoes are
// kept in the project and come back, opening a project finds its latest model, machine and plans,
// and the embedded demo project opens with this build's schema.
#include <QComboBox>
#include <QFile>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "search_chart.h"
#include "unity/projects/project.h"
#include "unity/views/project_session.h"
#include "unity/views/search_runner.h"
#include "unity/views/search_view.h"
#include "unity/views/substitution_model.h"
#include "view_fixtures.h"
#include "views_test.h"

using namespace unity;
using namespace unity::views;
using namespace unity::views::testing;

namespace {

int countKind(const std::vector<SearchEvent>& events, SearchEvent::Kind kind) {
  return int(std::count_if(events.begin(), events.end(),
                           [kind](const SearchEvent& e) { return e.kind == kind; }));
}

}  // namespace

class ProjectSessionTests : public QObject {
  Q_OBJECT

 private slots:
  void searchIsRecordedWithEveryEvent() {
    QTemporaryDir dir;
    const QString file = dir.filePath("search.unity");
    ExplorerDocument doc;
    openFigure1(doc);
    SearchRunner runner;
    runner.setRecording(file, "mnist-mlp");  // created when missing
    QSignalSpy recorded(&runner, &SearchRunner::recorded);
    QSignalSpy finished(&runner, &SearchRunner::finished);
    OptimizeOptions o;
    o.mode = "joint";
    QVERIFY(runner.start(doc.model(), doc.machine(), o));
    QVERIFY(finished.wait(60000));
    QCOMPARE(recorded.count(), 1);
    QVERIFY2(runner.recordingError().isEmpty(), qPrintable(runner.recordingError()));
    const qint64 id = runner.recordedSearchId();
    QVERIFY(id > 0);
    const auto project = projects::Project::open(file.toStdString(), projects::Access::ReadOnly);
    const auto search = project.search(id);
    QVERIFY(search.has_value());
    QCOMPARE(search->status, std::string("completed"));
    QCOMPARE(search->model, std::string("mnist-mlp"));
    QCOMPARE(search->info.mode, std::string("joint"));
    const auto steps = project.load_search_steps(id);
    // Every candidate the GUI was shown is a recorded step.
    QCOMPARE(countKind(steps, SearchEvent::Kind::CandidateCosted), int(runner.points().size()));
    const auto plan = ProjectSession::readSearchPlan(file, id);
    QVERIFY(plan != nullptr);
    QCOMPARE(plan->summary.iteration_time_ms, runner.plan()->summary.iteration_time_ms);
  }

  void recordedSearchReplaysIntoTheSameChartAndPlan() {
    QTemporaryDir dir;
    ExplorerDocument doc;
    openFigure1(doc);
    QString error;
    QVERIFY2(doc.project()->create(dir.filePath("replay.unity"), &error), qPrintable(error));
    SearchView view(&doc);
    view.setMode("sequential");
    QSignalSpy searched(&view, &SearchView::searchFinished);
    QVERIFY(view.startSearch());
    QVERIFY(searched.wait(60000));
    const auto live = doc.plan("sequential");
    const int liveCandidates = view.chart()->candidateCount();
    const qint64 id = view.runner()->recordedSearchId();
    QVERIFY(id > 0);
    QCOMPARE(view.replayableSearches(), QList<qint64>{id});

    view.setMode("joint");  // the replay takes the recorded search's mode
    QSignalSpy started(view.runner(), &SearchRunner::started);
    QVERIFY(view.replaySearch(id, 0));
    QVERIFY(searched.wait(60000));
    QCOMPARE(started.count(), 1);
    QVERIFY(view.runner()->isReplay());
    QCOMPARE(searched.last().at(0).toString(), QString("sequential"));
    QCOMPARE(view.chart()->candidateCount(), liveCandidates);
    QVERIFY(doc.plan("sequential") != live);  // the plan read back from the project
    QCOMPARE(doc.plan("sequential")->summary.iteration_time_ms, live->summary.iteration_time_ms);
    QVERIFY(!view.replaySearch(id + 100, 0));  // no such search
  }

  void replayPausesAndCancelsLikeASearch() {
    QTemporaryDir dir;
    const QString file = dir.filePath("pause.unity");
    ExplorerDocument doc;
    openFigure1(doc);
    SearchRunner recorder;
    recorder.setRecording(file, "mnist-mlp");
    OptimizeOptions o;
    o.mode = "joint";
    QVERIFY(recorder.start(doc.model(), doc.machine(), o));
    QVERIFY(recorder.waitForFinished(60000));
    const auto events = ProjectSession::readSearchSteps(file, recorder.recordedSearchId());
    SearchRunner replay;
    QSignalSpy paused(&replay, &SearchRunner::pausedAt);
    QSignalSpy finished(&replay, &SearchRunner::finished);
    QVERIFY(replay.startReplay(events, recorder.plan(), "joint", 0, /*paused=*/true));
    QVERIFY(paused.wait(10000));
    QCOMPARE(replay.state(), SearchRunner::State::Paused);
    // Each step lets exactly one more recorded candidate through, as in a live search.
    for (int i = 0; i < 2; ++i) {
      const int costed = int(replay.points().size());
      replay.step();
      QVERIFY(paused.wait(10000));
      QCOMPARE(int(replay.points().size()), costed + 1);
    }
    replay.cancel();
    QVERIFY(finished.wait(10000));
    QCOMPARE(finished.last().at(1).toString(), QString("cancelled"));
    QVERIFY(replay.points().size() < countKind(events, SearchEvent::Kind::CandidateCosted));
  }

  void decisionsAreKeptInTheProject() {
    QTemporaryDir dir;
    const QString file = dir.filePath("decisions.unity");
    ExplorerDocument doc;
    openFigure1(doc);
    QString error;
    QVERIFY(doc.project()->create(file, &error));
    SearchView view(&doc);
    SubstitutionModel* table = view.substitutions();
    const QString rule = table->ruleAt(0);
    table->setDecision(0, SubstitutionModel::Decision::Veto);
    const int at = table->addLocation(table->ruleAt(1), "fc1");
    table->setDecision(at, SubstitutionModel::Decision::Pin);
    ProjectContents contents = ProjectSession::readContents(file);
    QVERIFY2(contents.error.isEmpty(), qPrintable(contents.error));
    QCOMPARE(contents.vetoes, QStringList{rule});
    QCOMPARE(contents.pins, QStringList{table->ruleAt(1) + "@fc1"});
    table->setDecision(0, SubstitutionModel::Decision::Neutral);  // cleared in the file too
    contents = ProjectSession::readContents(file);
    QVERIFY(contents.vetoes.isEmpty());
    QCOMPARE(contents.pins.size(), 1);
    // Another window's table takes them from the project.
    SearchView other(&doc);
    other.setDecisions(contents.pins, contents.vetoes);
    QCOMPARE(other.substitutions()->pins(), contents.pins);
    QVERIFY(other.substitutions()->vetoes().isEmpty());
  }

  void openingFindsTheLatestModelMachineAndPlans() {
    QTemporaryDir dir;
    const QString file = dir.filePath("contents.unity");
    ExplorerDocument doc;
    openIn(doc, "mnist-mlp", "summit", {0, 2});
    QString error;
    QVERIFY(doc.project()->create(file, &error));
    const auto dp = makePlan(*doc.model(), *doc.machine(), "data-parallel");
    const auto joint = makePlan(*doc.model(), *doc.machine(), "joint");
    QVERIFY2(doc.project()->store(*doc.model(), "mnist-mlp", *doc.machine(), {dp, joint}, {},
                                  {"fuse_linear_relu"}, &error),
             qPrintable(error));
    doc.project()->close();
    const ProjectContents c = ProjectSession::readContents(file);
    QVERIFY2(c.error.isEmpty(), qPrintable(c.error));
    QVERIFY(c.model && c.machine);
    QCOMPARE(c.model->structural_hash(), doc.model()->structural_hash());
    QCOMPARE(c.modelSource, QString("mnist-mlp"));
    QCOMPARE(c.machine->num_devices(), 2);
    QCOMPARE(int(c.plans.size()), 2);
    QCOMPARE(c.plans.at("joint")->summary.iteration_time_ms, joint->summary.iteration_time_ms);
    QCOMPARE(c.plans.at("data-parallel")->summary.iteration_time_ms, dp->summary.iteration_time_ms);
    QCOMPARE(c.vetoes, QStringList{"fuse_linear_relu"});
    // Not a project: a message, and the file is left alone.
    QFile junk(dir.filePath("junk.unity"));
    QVERIFY(junk.open(QIODevice::WriteOnly));
    junk.write("not a project");
    junk.close();
    ProjectSession session;
    QVERIFY(!session.open(junk.fileName(), &error));
    QVERIFY(!error.isEmpty());
    QVERIFY(!session.isOpen());
    QCOMPARE(QFile(junk.fileName()).size(), qint64(13));
  }

  void demoProjectOpensWithThisBuild() {
    const QString resource(":/unity/demo/mnist-mlp-demo.unity");
    if (!QFile::exists(resource)) QSKIP("this build embeds no demo project");
    QTemporaryDir dir;
    const QString copy = dir.filePath("demo.unity");
    QVERIFY(QFile::copy(resource, copy));
    QFile::setPermissions(copy, QFile::ReadOwner | QFile::WriteOwner);
    ProjectSession session;
    QString error;
    QVERIFY2(session.open(copy, &error), qPrintable(error));
    QCOMPARE(session.project()->schema_version(), projects::Project::latest_schema_version());
    const ProjectContents c = ProjectSession::readContents(copy);
    QVERIFY2(c.error.isEmpty(), qPrintable(c.error));
    QCOMPARE(QString::fromStdString(c.model->name), QString("mnist-mlp"));
    QCOMPARE(c.machine->num_devices(), 2);
    for (const char* mode : {"data-parallel", "sequential", "joint"})
      QVERIFY2(c.plans.count(mode), mode);
    QVERIFY(!session.runs().empty());
    QCOMPARE(session.runs().front().status, std::string("completed"));
    QVERIFY(session.runMetrics(session.runs().front().id).size() > 1);
  }
};

UNITY_VIEWS_SUITE(ProjectSessionTests);
#include "test_project_session.moc"
