// The pipeline pictures: the timeline has a box for every forward and backward pass (stages x
// micro-batches x 2 x interleave) inside its stage's row, a measured timeline appears under the
// predicted one once the document has a measurement, the memory bars stack to the plan's
// rank_memory (and the measured ones to the measurement), the topology view colours devices by
// stage, and plans without a pipeline get messages, not crashes. Geometry and counts, never pixels.
#include <QCheckBox>
#include <QComboBox>
#include <QImage>
#include <QPainter>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QtTest>

#include "pipeline_colors.h"
#include "unity/core/pipeline/pipeline_schedule.h"
#include "unity/views/compare_view.h"
#include "unity/views/layout_request_panel.h"
#include "unity/views/memory_bars_chart.h"
#include "unity/views/memory_view.h"
#include "unity/views/pcg_view.h"
#include "unity/views/pipeline_plan_panel.h"
#include "unity/views/pipeline_timeline_chart.h"
#include "unity/views/plan_chooser.h"
#include "unity/views/run_view.h"
#include "unity/views/search_runner.h"
#include "unity/views/search_view.h"
#include "unity/views/timeline_view.h"
#include "unity/views/topology_view.h"
#include "view_fixtures.h"
#include "views_test.h"

using namespace unity;
using namespace unity::views;
using namespace unity::views::testing;

namespace {

// gpt-tiny on 4 CPU ranks, Megatron-LM's layout with two stages of four micro-batches (as
// `unity optimize gpt-tiny --machine cpu-local --gpus 4 --mode expert --tp 1 --pp 2
// --micro-batches 4`).
std::shared_ptr<const Plan> tinyPipelinedPlan(ExplorerDocument& doc, int microBatches = 4,
                                              bool open = true) {
  if (open) openIn(doc, "gpt-tiny", "cpu-local", {0, 4});
  OptimizeOptions o;
  o.mode = "expert";
  o.layout.tensor_parallel = 1;
  o.layout.pipeline_stages = 2;
  o.layout.micro_batches = microBatches;
  return std::make_shared<const Plan>(optimize_plan(*doc.model(), *doc.machine(), o));
}

// What a run would report: the schedule 30% slower than predicted, and each rank's memory a
// little different from the prediction.
std::shared_ptr<executor::PipelineMeasurement> handMadeMeasurement(const PipelinePlan& p) {
  auto m = std::make_shared<executor::PipelineMeasurement>();
  m->timeline = predicted_timeline(p);
  m->timeline.measured = true;
  for (TimelineBox& b : m->timeline.boxes) {
    b.start *= 1.3;
    b.end *= 1.3;
  }
  for (CommBox& c : m->timeline.comm) {
    c.start *= 1.3;
    c.end *= 1.3;
  }
  m->timeline.makespan *= 1.3;
  for (const MemoryBreakdown& r : p.rank_memory) {
    MemoryBreakdown measured = r;
    measured.activations *= 1.5;
    measured.workspace += 4096;
    m->memory.push_back(measured);
    m->peak_memory_bytes.push_back(measured.total());
  }
  m->plan_dtype = "float16";
  m->compute_dtype = "float32";
  return m;
}

bool waitUntilIdle(const TimelineView& view) {
  QElapsedTimer t;
  t.start();
  while (view.busy() && t.elapsed() < 60000) QTest::qWait(5);
  QTest::qWait(1);  // the watcher's finished signal
  return !view.busy();
}

}  // namespace

class PipelineViewsTests : public QObject {
  Q_OBJECT

 private slots:
  // The schedule is simulated on a worker thread: the view comes back from showing a plan at once,
  // the timeline arrives through the event loop (so it cannot be there before the loop runs), and
  // the view says it is busy meanwhile. Asserted by order of events, not by time.
  void theTimelineIsSimulatedOffTheGuiThread() {
    ExplorerDocument doc;
    const auto plan = tinyPipelinedPlan(doc, 8);
    doc.setPlan("expert", plan);
    TimelineView view(&doc);
    QSignalSpy busy(&view, &TimelineView::busyChanged);
    view.resize(1000, 500);
    QVERIFY(!view.predictedChart()->hasTimeline());  // nothing computed inline
    QVERIFY(waitUntilIdle(view));
    QTRY_VERIFY(view.predictedChart()->hasTimeline());
    QCOMPARE(view.predictedChart()->boxCount(), 2 * 8 * 2);
    if (!busy.isEmpty()) QCOMPARE(busy.last().at(0).toBool(), false);  // ended idle
  }

  void timelineHasABoxForEveryPassInItsStagesRow() {
    ExplorerDocument doc;
    const auto plan = tinyPipelinedPlan(doc);
    QVERIFY(plan->pipeline);
    const PipelinePlan& p = *plan->pipeline;
    QCOMPARE(p.pipeline_stages, 2);
    QCOMPARE(p.micro_batches, 4);
    doc.setPlan("expert", plan);
    TimelineView view(&doc);
    view.resize(1000, 500);
    QVERIFY(waitUntilIdle(view));
    QTRY_VERIFY(view.predictedChart()->hasTimeline());
    PipelineTimelineChart* chart = view.predictedChart();
    QCOMPARE(chart->boxCount(), p.pipeline_stages * p.micro_batches * 2 * p.interleave);
    QVERIFY(!view.measuredChart()->isVisibleTo(&view));
    QVERIFY(chart->caption().contains("bubble"));
    QVERIFY(chart->caption().contains("makespan"));
    QVERIFY(view.layoutText().contains("pp 2"));
    // Every box lies in its stage's row, within the time axis; a stage's boxes never overlap.
    const QSizeF size(1000, 400);
    const QList<QRectF> rows = chart->rowRects(size);
    const QList<QRectF> boxes = chart->boxRects(size);
    QCOMPARE(rows.size(), p.pipeline_stages);
    QCOMPARE(boxes.size(), chart->boxCount());
    int forward = 0;
    for (int i = 0; i < boxes.size(); ++i) {
      const TimelineBox& b = chart->timeline().boxes[size_t(i)];
      QVERIFY(rows[b.rank].adjusted(-0.5, 0, 0.5, 0).contains(boxes[i]));
      forward += b.backward ? 0 : 1;
      for (int j = 0; j < i; ++j)
        if (chart->timeline().boxes[size_t(j)].rank == b.rank)
          QVERIFY(boxes[i].intersected(boxes[j]).width() < 0.5);
    }
    QCOMPARE(forward, boxes.size() / 2);
    QVERIFY(forwardColor(0) != backwardColor(0));
  }

  void interleavedTimelinesHaveBoxesForEveryChunk() {
    // A hand-made interleaved layout: 4 stages x 2 chunks, 8 micro-batches.
    PipelinePlan p;
    p.pipeline_stages = 4;
    p.interleave = 2;
    p.micro_batches = 8;
    for (int c = 0; c < 8; ++c) {
      StagePlan s;
      s.rank = c % 4;
      s.first_layer = s.last_layer = c;
      s.forward = 1e-3;
      s.backward = 2e-3;
      p.chunks.push_back(s);
    }
    PipelineTimelineChart chart;
    chart.setTimeline(predicted_timeline(p), "Predicted");
    QCOMPARE(chart.boxCount(), 4 * 8 * 2 * 2);
    QCOMPARE(chart.boxRects(QSizeF(800, 300)).size(), 4 * 8 * 2 * 2);
    QVERIFY(chart.caption().contains("2 chunks"));
  }

  // Under each stage's row, a thinner lane of its communication: every box in its stage's lane,
  // below the compute boxes; the gradient sync and the optimizer step after the flush, so that the
  // axis spans the plan's whole iteration; hidden and exposed parts in different colours.
  void communicationLanesRunUnderTheirStages() {
    ExplorerDocument doc;
    const auto plan = tinyPipelinedPlan(doc);
    const PipelinePlan& p = *plan->pipeline;
    QVERIFY(p.sync_time > 0);
    QVERIFY(p.update_time > 0);
    PipelineTimelineChart chart;
    chart.setTimeline(predicted_timeline(p), "Predicted");
    const PipelineTimeline& t = chart.timeline();
    QVERIFY(!t.comm.empty());
    QVERIFY(std::abs(chart.timeScale() - p.iteration_time) <= 1e-9 * p.iteration_time);
    QVERIFY(chart.caption().contains("schedule"));
    const QSizeF size(1200, 400);
    const QList<QRectF> rows = chart.rowRects(size);
    const QList<QRectF> boxes = chart.boxRects(size);
    const QList<QRectF> comms = chart.commRects(size);
    QCOMPARE(comms.size(), int(t.comm.size()));
    for (int i = 0; i < comms.size(); ++i) {
      const CommBox& c = t.comm[size_t(i)];
      const QRectF lane = chart.laneRect(size, c.rank);
      QVERIFY(lane.height() > 0 && lane.height() < rows[c.rank].height() / 2);
      QVERIFY(lane.adjusted(-0.5, -0.5, 0.5, 0.5).contains(comms[i]));
      QVERIFY(rows[c.rank].adjusted(-0.5, 0, 0.5, 0).contains(comms[i]));
      QVERIFY(comms[i].right() <= rows[c.rank].right() + 0.5);  // on the axis
    }
    for (int i = 0; i < boxes.size(); ++i) {
      const int rank = t.boxes[size_t(i)].rank;
      QVERIFY(boxes[i].bottom() <= chart.laneRect(size, rank).top() + 0.5);
    }
    // The exposed gradient sync and the optimizer step lie after the flush.
    int after = 0;
    for (const CommBox& c : t.comm)
      if (c.kind != kCommP2p && c.exposed) {
        QVERIFY(c.start >= t.makespan - 1e-12);
        ++after;
      }
    QCOMPARE(after, 2 * p.pipeline_stages);
    // The picture: the lane's exposed parts are painted in a strong colour, hidden ones light.
    QImage image(size.toSize(), QImage::Format_ARGB32);
    QPainter painter(&image);
    chart.paintChart(painter, size);
    painter.end();
    for (int i = 0; i < comms.size(); ++i) {
      const CommBox& c = t.comm[size_t(i)];
      if (c.kind != kCommGradientSync || comms[i].width() < 4) continue;
      const QColor px = image.pixelColor(comms[i].center().toPoint() + QPoint(0, 1));
      if (c.exposed)
        QVERIFY2(px.lightness() < 120, qPrintable(px.name()));
      else
        QVERIFY2(px.lightness() > 150, qPrintable(px.name()));
    }
    // A measured timeline without communication keeps its rows whole.
    PipelineTimeline measured = t;
    measured.comm.clear();
    measured.measured = true;
    chart.setTimeline(measured, "Measured");
    QVERIFY(chart.laneRect(size, 0).isEmpty());
    QCOMPARE(chart.timeScale(), measured.makespan);
    QCOMPARE(chart.boxRects(size).first().height(), chart.rowRects(size).first().height() - 3);
  }

  void measuredTimelineAppearsWithAMeasurement() {
    ExplorerDocument doc;
    const auto plan = tinyPipelinedPlan(doc);
    doc.setPlan("expert", plan);
    TimelineView view(&doc);
    view.resize(1000, 600);
    view.show();
    QVERIFY(waitUntilIdle(view));
    QTRY_VERIFY(view.predictedChart()->hasTimeline());
    QCOMPARE(view.measuredChart()->boxCount(), 0);
    const auto m = handMadeMeasurement(*plan->pipeline);
    QSignalSpy changed(&doc, &ExplorerDocument::measurementChanged);
    doc.setMeasurement(plan, m);
    QCOMPARE(changed.count(), 1);
    QVERIFY(view.measuredChart()->isVisibleTo(&view));
    QCOMPARE(view.measuredChart()->boxCount(), view.predictedChart()->boxCount());
    QVERIFY(view.measuredChart()->timeline().measured);
    QVERIFY(view.measuredChart()->caption().startsWith("Measured"));
    // One time scale: the slower measured iteration spans more of the same axis.
    QCOMPARE(view.predictedChart()->timeScale(), view.measuredChart()->timeScale());
    QCOMPARE(view.measuredChart()->timeScale(), m->timeline.end());
    const QSizeF size(1000, 300);
    QVERIFY(view.measuredChart()->boxRects(size).last().right() >
            view.predictedChart()->boxRects(size).last().right());
    // A plan read again (same layout, another object) still finds its measurement.
    const auto copy = std::make_shared<const Plan>(*plan);
    QCOMPARE(doc.measurement(*copy), m);
    // A new model drops it.
    openIn(doc, "mnist-mlp", "summit", {0, 2});
    QVERIFY(!doc.measurement(*plan));
  }

  void memoryBarsStackToTheRanksMemory() {
    ExplorerDocument doc;
    const auto plan = tinyPipelinedPlan(doc);
    doc.setPlan("expert", plan);
    MemoryView view(&doc);
    view.resize(900, 500);
    const PipelinePlan& p = *plan->pipeline;
    MemoryBarsChart* chart = view.chart();
    QCOMPARE(chart->bars().size(), p.pipeline_stages);
    QCOMPARE(chart->capacity(), double(doc.machine()->device(0).memory_bytes));
    const QSizeF size(900, 400);
    const auto rects = chart->segmentRects(size);
    QCOMPARE(rects.size(), chart->bars().size());
    double pixelsPerByte = 0;
    for (int i = 0; i < chart->bars().size(); ++i) {
      const MemoryBarsChart::Bar& bar = chart->bars()[i];
      const MemoryBreakdown& want = p.rank_memory[size_t(bar.rank)];
      QCOMPARE(bar.rank, i);
      QVERIFY(!bar.measured);
      QCOMPARE(bar.total(), want.total());
      QCOMPARE(bar.bytes[MemoryBarsChart::Weights], want.weights);
      QCOMPARE(bar.bytes[MemoryBarsChart::Optimizer], want.optimizer);
      QCOMPARE(bar.bytes[MemoryBarsChart::Experts], 0.0);  // a dense model
      QCOMPARE(bar.bytes[MemoryBarsChart::Activations], want.activations);
      // Stacked: each segment starts where the one below ends; the stack's height is the total's.
      double height = 0;
      for (int k = 0; k < MemoryBarsChart::kKinds; ++k) {
        height += rects[i][size_t(k)].height();
        if (k > 0) QCOMPARE(rects[i][size_t(k)].bottom(), rects[i][size_t(k - 1)].top());
      }
      if (pixelsPerByte == 0) pixelsPerByte = height / bar.total();
      QVERIFY(qAbs(height - bar.total() * pixelsPerByte) < 1e-6);
    }
    QVERIFY(view.noteText().contains("pipeline rank"));
    // With a measurement: a measured bar beside every predicted one, stacking to what was measured.
    const auto m = handMadeMeasurement(p);
    doc.setMeasurement(plan, m);
    QCOMPARE(chart->bars().size(), 2 * p.pipeline_stages);
    QVERIFY(chart->hasMeasured());
    for (const MemoryBarsChart::Bar& bar : chart->bars())
      if (bar.measured) QCOMPARE(bar.total(), m->memory[size_t(bar.rank)].total());
    const auto paired = chart->segmentRects(size);
    QVERIFY(paired[1][0].left() > paired[0][0].right() - 1e-9);  // measured right of predicted
    QVERIFY(view.noteText().contains("float32"));
  }

  void plansWithoutAPipelineGetMessages() {
    ExplorerDocument doc;
    openIn(doc, "mnist-mlp", "summit", {0, 2});
    doc.setPlan("data-parallel", makePlan(*doc.model(), *doc.machine(), "data-parallel"));
    TimelineView timeline(&doc);
    MemoryView memory(&doc);
    QVERIFY(waitUntilIdle(timeline));
    QCOMPARE(timeline.predictedChart()->boxCount(), 0);
    QVERIFY(timeline.predictedChart()->message().contains("not a pipelined plan"));
    // Each device's total, from the cost model.
    QCOMPARE(memory.chart()->bars().size(), 2);
    QVERIFY(memory.chart()->bars()[0].totalOnly);
    QCOMPARE(memory.chart()->bars()[0].total(),
             doc.plan("data-parallel")->mapping.memory_per_device[0]);
    // No plan at all.
    ExplorerDocument empty;
    TimelineView none(&empty);
    MemoryView noMemory(&empty);
    QVERIFY(!none.predictedChart()->hasTimeline());
    QVERIFY(noMemory.chart()->bars().isEmpty());
    QVERIFY(!noMemory.chart()->message().isEmpty());
  }

  void topologyColoursDevicesByStage() {
    ExplorerDocument doc;
    const auto plan = tinyPipelinedPlan(doc);
    doc.setPlan("expert", plan);
    TopologyView view(&doc);
    view.showMode("expert");
    QCOMPARE(view.heatMap(), TopologyView::HeatMap::Stage);
    const PipelinePlan& p = *plan->pipeline;
    const int perStage = p.tensor_parallel * p.data_parallel;
    QCOMPARE(view.stagePerDevice().size(), 4);
    for (int d = 0; d < 4; ++d) {
      QCOMPARE(view.stagePerDevice()[d], d / perStage);
      QCOMPARE(view.deviceColor(d), stageColor(d / perStage));
    }
    QVERIFY(view.deviceColor(0) != view.deviceColor(3));
    QVERIFY(view.legendText().contains("stage 0"));
    QVERIFY(view.legendText().contains("stage 1"));
    QVERIFY(view.legendText().contains("layer"));
    // A plan without a pipeline goes back to memory.
    doc.setPlan("data-parallel", makePlan(*doc.model(), *doc.machine(), "data-parallel"));
    view.showMode("data-parallel");
    QCOMPARE(view.heatMap(), TopologyView::HeatMap::Memory);
    QCOMPARE(view.stagePerDevice()[0], -1);
    view.setHeatMap(TopologyView::HeatMap::Stage);  // refused without stages
    QCOMPARE(view.heatMap(), TopologyView::HeatMap::Memory);
  }

  // With context parallelism a stage's devices are tp x cp x dp, and the texts count them all.
  void topologyCountsContextParallelDevicesInAStage() {
    ExplorerDocument doc;
    openIn(doc, "gpt-tiny", "cpu-local", {0, 8});
    OptimizeOptions o;
    o.mode = "expert";
    o.layout.tensor_parallel = 1;
    o.layout.context_parallel = 2;
    o.layout.pipeline_stages = 2;
    o.layout.micro_batches = 4;
    const auto plan = std::make_shared<const Plan>(optimize_plan(*doc.model(), *doc.machine(), o));
    QVERIFY(plan->pipeline);
    QCOMPARE(plan->pipeline->context_parallel, 2);
    QCOMPARE(plan->pipeline->data_parallel, 2);
    doc.setPlan("expert", plan);
    TopologyView view(&doc);
    view.showMode("expert");
    for (int d = 0; d < 8; ++d) QCOMPARE(view.stagePerDevice()[d], d / 4);
    QVERIFY2(view.legendText().contains(
                 "4 devices each: 1 tensor-parallel × 2 context-parallel × 2 data-parallel copies"),
             qPrintable(view.legendText()));
    QVERIFY2(view.selectionText().contains("stage <i>s</i> runs on devices 4<i>s</i> to "
                                           "4<i>s</i> + 3, as 2 data-parallel copies of 2 "
                                           "consecutive devices (2 context-parallel shards of 1 "
                                           "tensor-parallel ones)"),
             qPrintable(view.selectionText()));
  }

  void timelinesExportAsPngSvgAndChromeTrace() {
    ExplorerDocument doc;
    const auto plan = tinyPipelinedPlan(doc);
    PipelineTimelineChart chart;
    chart.resize(800, 300);
    QString error;
    QTemporaryDir dir;
    QVERIFY(!chart.exportImage(dir.filePath("none.png"), &error));  // nothing to export yet
    chart.setTimeline(predicted_timeline(*plan->pipeline), "Predicted");
    QVERIFY2(chart.exportImage(dir.filePath("t.png"), &error), qPrintable(error));
    QImage png(dir.filePath("t.png"));
    QVERIFY(png.width() >= 3200);  // twice the 1,600 px the export draws at least
    QVERIFY2(chart.exportImage(dir.filePath("t.svg"), &error), qPrintable(error));
    QFile svg(dir.filePath("t.svg"));
    QVERIFY(svg.open(QIODevice::ReadOnly));
    QVERIFY(svg.readAll().contains("<svg"));
    QVERIFY2(chart.exportChromeTrace(dir.filePath("t.json"), &error), qPrintable(error));
    QFile trace(dir.filePath("t.json"));
    QVERIFY(trace.open(QIODevice::ReadOnly));
    const nlohmann::json j = nlohmann::json::parse(trace.readAll().toStdString());
    // A complete event per pass on the stages' threads, one per communication box on theirs.
    int complete = 0, comm = 0;
    const int stages = chart.timeline().stages;
    for (const auto& e : j.at("traceEvents"))
      if (e.value("ph", "") == "X") (e.at("tid").get<int>() < stages ? complete : comm) += 1;
    QCOMPARE(complete, chart.boxCount());
    QCOMPARE(comm, int(chart.timeline().comm.size()));
    QVERIFY(comm > 0);
  }

  void runViewShowsPredictedAndMeasuredPipelines() {
    ExplorerDocument doc;
    const auto plan = tinyPipelinedPlan(doc);
    doc.setPlan("expert", plan);
    RunView view(&doc);
    view.resize(1200, 800);
    view.setPlanMode("expert");
    PipelinePlanPanel* panel = view.pipelinePanel();
    QVERIFY(panel->isVisibleTo(&view));
    QTRY_COMPARE(panel->predictedChart()->boxCount(), 2 * 4 * 2);
    QCOMPARE(panel->measuredChart()->boxCount(), 0);
    QCOMPARE(panel->memoryChart()->bars().size(), 2);
    const auto m = handMadeMeasurement(*plan->pipeline);
    panel->setMeasurement(m);
    QCOMPARE(panel->measuredChart()->boxCount(), 2 * 4 * 2);
    QCOMPARE(panel->memoryChart()->bars().size(), 4);
    // One scale for both: the longer of the two whole iterations (communication lanes included).
    QCOMPARE(panel->predictedChart()->timeScale(),
             std::max(m->timeline.end(), panel->predictedChart()->timeline().end()));
    // A plan without a pipeline hides the panel.
    doc.setPlan("data-parallel", makePlan(*doc.model(), *doc.machine(), "data-parallel"));
    view.setPlanMode("data-parallel");
    QVERIFY(!panel->isVisibleTo(&view));
  }

  // End to end: a real 4-rank run of gpt-tiny's pipeline (mpirun, unity-worker) fills the run
  // view's measured timeline and memory, and the timeline and memory views' too.
  void aPipelinedRunShowsItsMeasuredTimeline() {
    ExplorerDocument doc;
    const auto plan = tinyPipelinedPlan(doc);
    doc.setPlan("expert", plan);
    RunView run(&doc);
    TimelineView timeline(&doc);
    MemoryView memory(&doc);
    run.setPlanMode("expert");
    run.setWorker(QStringLiteral(UNITY_WORKER_PATH));
    run.setIterations(2, 0);
    // One rank per device: the view offers nothing else for a pipelined plan.
    RunSettings wrong;
    wrong.ranks = 2;
    QVERIFY(!run.runner()->start(plan, wrong));
    QVERIFY(run.runner()->error().contains("one rank per device"));
    QVERIFY2(run.startRun(), qPrintable(run.statusText()));
    QVERIFY(run.runner()->waitForFinished(240000));
    QVERIFY2(run.runner()->state() == RunRunner::State::Finished,
             qPrintable(run.runner()->error()));
    const RunOutcome& outcome = run.runner()->outcome();
    QVERIFY(outcome.pipeline);
    QCOMPARE(outcome.pipeline->timeline.boxes.size(), size_t(2 * 4 * 2));
    QCOMPARE(run.pipelinePanel()->measuredChart()->boxCount(), 2 * 4 * 2);
    QVERIFY(run.pipelinePanel()->measuredChart()->timeline().measured);
    QCOMPARE(run.pipelinePanel()->memoryChart()->bars().size(), 4);
    QVERIFY(waitUntilIdle(timeline));
    QCOMPARE(timeline.measuredChart()->boxCount(), 2 * 4 * 2);
    QVERIFY(memory.chart()->hasMeasured());
  }

  void compareViewPutsTwoPipelinesSideBySide() {
    ExplorerDocument doc;
    const auto four = tinyPipelinedPlan(doc);
    const auto eight = tinyPipelinedPlan(doc, 8, /*open=*/false);
    doc.setPlan("expert", four);
    doc.setPlan("joint", eight);
    CompareView view(&doc);
    view.resize(1200, 800);
    view.setModes("expert", "joint");
    QVERIFY(view.leftPipeline()->isVisibleTo(&view));
    QVERIFY(view.rightPipeline()->isVisibleTo(&view));
    QVERIFY(!view.leftView()->isVisibleTo(&view));
    QTRY_COMPARE(view.leftPipeline()->predictedChart()->boxCount(), 2 * 4 * 2);
    QTRY_COMPARE(view.rightPipeline()->predictedChart()->boxCount(), 2 * 8 * 2);
    QCOMPARE(view.leftPipeline()->memoryChart()->bars().size(), 2);
    QCOMPARE(view.rightPipeline()->memoryChart()->bars().size(), 2);
    // One time scale: the longer iteration's, its gradient sync and optimizer step included.
    const double longest = std::max(view.leftPipeline()->predictedChart()->timeline().end(),
                                    view.rightPipeline()->predictedChart()->timeline().end());
    QTRY_COMPARE(view.leftPipeline()->predictedChart()->timeScale(), longest);
    QCOMPARE(view.rightPipeline()->predictedChart()->timeScale(), longest);
    // Against a plan without a pipeline: its PCG comes back on that side.
    doc.setPlan("data-parallel", makePlan(*doc.model(), *doc.machine(), "data-parallel"));
    view.setModes("data-parallel", "joint");
    QVERIFY(!view.leftPipeline()->isVisibleTo(&view));
    QVERIFY(view.leftView()->isVisibleTo(&view));
    QVERIFY(view.rightPipeline()->isVisibleTo(&view));
  }

  void searchViewPinsThePipelineLayout() {
    ExplorerDocument doc;
    openIn(doc, "gpt-tiny", "cpu-local", {0, 4});
    SearchView view(&doc);
    LayoutRequestPanel* pins = view.layoutRequest();
    QVERIFY(pins->request().empty());  // everything searched by default
    QVERIFY(pins->pipelinesAllowed());
    pins->stagesBox()->setValue(2);
    pins->microBatchesBox()->setValue(4);
    pins->tensorParallelBox()->setValue(1);
    pins->recomputeBox()->setCurrentIndex(pins->recomputeBox()->findData("full"));
    pins->zeroBox()->setCurrentIndex(pins->zeroBox()->findData(0));
    const LayoutRequest r = pins->request();
    QCOMPARE(r.pipeline_stages, 2);
    QCOMPARE(r.micro_batches, 4);
    QCOMPARE(r.tensor_parallel, 1);
    QVERIFY(r.recompute && *r.recompute == Recompute::Full);
    QCOMPARE(r.zero_stage, 0);
    QVERIFY(pins->describe().contains("--pp 2"));
    view.setMode("joint");
    QVERIFY(view.startSearch());
    QCOMPARE(view.runner()->options().layout.pipeline_stages, 2);
    QVERIFY(view.runner()->waitForFinished(240000));
    QTRY_VERIFY_WITH_TIMEOUT(doc.plan("joint") != nullptr, 10000);
    const auto plan = doc.plan("joint");
    QVERIFY(plan->pipeline);
    QCOMPARE(plan->pipeline->pipeline_stages, 2);
    QCOMPARE(plan->pipeline->micro_batches, 4);
    QCOMPARE(plan->pipeline->recompute, Recompute::Full);
    QCOMPARE(plan->pipeline->zero_stage, 0);
    // Vetoing pipelines: the search gets none, whatever was pinned.
    pins->pipelinesBox()->setChecked(false);
    QVERIFY(pins->request().empty());
    QVERIFY(!pins->stagesBox()->isEnabled());
    QVERIFY(view.startSearch());
    QVERIFY(!view.runner()->options().pipelines);
    QVERIFY(view.runner()->waitForFinished(240000));
    QTRY_VERIFY_WITH_TIMEOUT(doc.plan("joint") != plan, 10000);
    QVERIFY(!doc.plan("joint")->pipeline);
    // Plans a launcher takes, any one's or DeepSpeed's: the request says so, and so does the
    // status line.
    pins->pipelinesBox()->setChecked(true);
    QComboBox* launcher = pins->launcherBox();
    QVERIFY(launcher->isEnabled());
    launcher->setCurrentIndex(launcher->findData("any"));
    QVERIFY(pins->request().launchable);
    QVERIFY(pins->describe().contains("--launchable"));
    launcher->setCurrentIndex(launcher->findData("deepspeed"));
    const LayoutRequest deepspeed = pins->request();
    QVERIFY(deepspeed.launchable);
    QCOMPARE(deepspeed.interleave, 1);
    QCOMPARE(deepspeed.max_zero_with_stages, 1);
    QVERIFY(pins->describe().contains("--launcher deepspeed"));
    pins->setRequest(LayoutRequest{});
    QCOMPARE(launcher->currentIndex(), 0);
    pins->setRequest(deepspeed);
    QCOMPARE(launcher->currentData().toString(), QString("deepspeed"));
  }

  // Megatron-Core's recomputation modules from the pins: the MoE recipes' presets, and a plan's
  // own modules set back as an item of their own.
  void layoutPinsTakeRecomputationModules() {
    LayoutRequestPanel pins;
    QComboBox* box = pins.recomputeBox();
    const int normAct = box->findText("selective (layernorm,moe_act)");
    QVERIFY(normAct > 0);
    box->setCurrentIndex(normAct);
    LayoutRequest r = pins.request();
    QVERIFY(r.recompute && *r.recompute == Recompute::Selective);
    QCOMPARE(to_string(r.recompute_modules), std::string("layernorm,moe_act"));
    QVERIFY(pins.describe().contains("--recompute-modules layernorm,moe_act"));
    r.recompute_modules = recompute_modules_from_string("moe");
    pins.setRequest(r);
    QCOMPARE(box->currentText(), QString("selective (moe)"));
    QCOMPARE(to_string(pins.request().recompute_modules), std::string("moe"));
    // Plain selective is the attention's, Megatron's default.
    box->setCurrentIndex(box->findData("selective"));
    QVERIFY(pins.request().recompute_modules.is_default());
  }

  // The plan's headline says which launchers run it as it is: Megatron-LM takes gpt-tiny's two
  // stages of whole layers; an MLP's plan has no launcher to name.
  void headlineNamesTheLaunchersThatRunThePlan() {
    ExplorerDocument doc;
    doc.setPlan("expert", tinyPipelinedPlan(doc));
    PcgView pcg(&doc);
    QVERIFY2(pcg.headline().contains("Launch: Megatron-LM"), qPrintable(pcg.headline()));
    ExplorerDocument mlp;
    openIn(mlp, "mnist-mlp", "summit", {0, 2});
    mlp.setPlan("data-parallel", makePlan(*mlp.model(), *mlp.machine(), "data-parallel"));
    PcgView other(&mlp);
    QVERIFY(!other.headline().isEmpty());
    QVERIFY(!other.headline().contains("Launch:"));
  }

  void chooserPrefersThePipelinedPlan() {
    ExplorerDocument doc;
    const auto plan = tinyPipelinedPlan(doc);
    doc.setPlan("expert", plan);
    // gpt-tiny's data-parallel plan is faster on 4 CPU ranks, yet the timeline shows the pipeline.
    doc.setPlan("data-parallel", makePlan(*doc.model(), *doc.machine(), "data-parallel"));
    PlanChooser chooser(&doc);
    QCOMPARE(chooser.mode(), QString("expert"));
    chooser.choose("data-parallel");
    QCOMPARE(chooser.mode(), QString("data-parallel"));
    doc.setPreferredMode("expert");
    QCOMPARE(doc.bestMode(), QString("expert"));
  }
};

UNITY_VIEWS_SUITE(PipelineViewsTests);
#include "test_pipeline_views.moc"
