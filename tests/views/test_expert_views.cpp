// What the explorer shows of a mixture-of-experts plan (issue 31, item 6): moe-tiny (4 experts a
// layer, top 2) on 8 CPU ranks with two stages of four data-parallel copies and its experts over
// ep 2. The memory bars give the experts a segment of their own, the timeline's lanes hold the
// plan's dispatches and combines, and the topology view colours each device by the experts it
// holds and outlines each expert-parallel group. Values and geometry, never pixels.
#include <QtTest>

#include "unity/core/pipeline/expert_placement.h"
#include "unity/core/pipeline/pipeline_schedule.h"
#include "unity/views/display_format.h"
#include "unity/views/memory_bars_chart.h"
#include "unity/views/memory_view.h"
#include "unity/views/pipeline_timeline_chart.h"
#include "unity/views/timeline_view.h"
#include "unity/views/topology_view.h"
#include "view_fixtures.h"
#include "views_test.h"

using namespace unity;
using namespace unity::views;
using namespace unity::views::testing;

namespace {

// `unity optimize moe-tiny --machine cpu-local --gpus 8 --mode expert --tp 1 --pp 2 --ep 2`.
std::shared_ptr<const Plan> moeTinyPlan(ExplorerDocument& doc) {
  openIn(doc, "moe-tiny", "cpu-local", {0, 8});
  OptimizeOptions o;
  o.mode = "expert";
  o.layout.tensor_parallel = 1;
  o.layout.pipeline_stages = 2;
  o.layout.micro_batches = 2;
  o.layout.expert_parallel = 2;
  return std::make_shared<const Plan>(optimize_plan(*doc.model(), *doc.machine(), o));
}

}  // namespace

class ExpertViewsTests : public QObject {
  Q_OBJECT

 private slots:
  void memoryBarsGiveTheExpertsTheirOwnSegment() {
    ExplorerDocument doc;
    const auto plan = moeTinyPlan(doc);
    const PipelinePlan& p = *plan->pipeline;
    QCOMPARE(p.expert_parallel, 2);
    QCOMPARE(p.experts, std::int64_t{4});
    doc.setPlan("expert", plan);
    MemoryView view(&doc);
    MemoryBarsChart* chart = view.chart();
    QCOMPARE(chart->bars().size(), p.pipeline_stages);
    QVERIFY(chart->hasExperts());
    for (const MemoryBarsChart::Bar& bar : chart->bars()) {
      const MemoryBreakdown& want = p.rank_memory[size_t(bar.rank)];
      QVERIFY(want.experts() > 0);
      QCOMPARE(bar.bytes[MemoryBarsChart::Experts], want.experts());
      QCOMPARE(bar.bytes[MemoryBarsChart::Weights], want.weights - want.expert_weights);
      QCOMPARE(bar.bytes[MemoryBarsChart::Optimizer], want.optimizer - want.expert_optimizer);
      QCOMPARE(bar.bytes[MemoryBarsChart::Activations], want.activations);
      QVERIFY(qAbs(bar.total() - want.total()) <= 1e-9 * want.total());
    }
    // The note says how many experts a device holds and over how many devices they are shared.
    QVERIFY2(view.noteText().contains("holds 2 of each MoE layer's 4 experts"),
             qPrintable(view.noteText()));
    QVERIFY(view.noteText().contains("expert parallelism 2"));
  }

  void timelineLanesHoldTheDispatchesAndCombines() {
    ExplorerDocument doc;
    const auto plan = moeTinyPlan(doc);
    const PipelinePlan& p = *plan->pipeline;
    QVERIFY(p.alltoall_time > 0);
    doc.setPlan("expert", plan);
    TimelineView view(&doc);
    QTRY_VERIFY(view.predictedChart()->hasTimeline());
    const PipelineTimeline& t = view.predictedChart()->timeline();
    // Each rank's lane: its chunks' all-to-alls for every micro-batch, all exposed (the plan does
    // not overlap them), half dispatch and half combine.
    std::vector<double> dispatch(size_t(p.pipeline_stages), 0.0), combine = dispatch;
    for (const CommBox& c : t.comm) {
      if (c.kind == kCommDispatch) dispatch[size_t(c.rank)] += c.end - c.start;
      if (c.kind == kCommCombine) combine[size_t(c.rank)] += c.end - c.start;
      if (c.kind == kCommDispatch || c.kind == kCommCombine) QVERIFY(c.exposed);
    }
    double busiest = 0;
    for (int r = 0; r < p.pipeline_stages; ++r) {
      double want = 0;
      for (const StagePlan& c : p.chunks)
        if (c.rank == r) want += p.micro_batches * c.exchanges.alltoall.total();
      QVERIFY(want > 0);
      QVERIFY(qAbs(dispatch[size_t(r)] + combine[size_t(r)] - want) <= 1e-9 * want);
      QVERIFY(qAbs(dispatch[size_t(r)] - combine[size_t(r)]) <= 1e-9 * want);
      busiest = std::max(busiest, want);
    }
    QVERIFY(qAbs(busiest - p.alltoall_time) <= 1e-9 * busiest);  // the plan's figure
    // The all-to-alls are said in the layout line and under the chart.
    QVERIFY2(view.layoutText().contains("ep 2"), qPrintable(view.layoutText()));
    QVERIFY2(view.exchangesText().contains("All-to-all"), qPrintable(view.exchangesText()));
    QVERIFY(view.exchangesText().contains(formatMs(p.alltoall_time * 1e3)));
  }

  void topologyShowsWhereTheExpertsLive() {
    ExplorerDocument doc;
    const auto plan = moeTinyPlan(doc);
    doc.setPlan("expert", plan);
    TopologyView view(&doc);
    view.showMode("expert");
    QCOMPARE(view.heatMap(), TopologyView::HeatMap::Experts);  // an EP plan opens on its experts
    // Stage s holds devices 4s..4s+3 (4 copies of 1 device); ep 2 pairs them: groups {0, 1},
    // {2, 3} in stage 0, each device holding 2 of the 4 experts of each MoE layer.
    QCOMPARE(view.expertsPerDevice().size(), 8);
    QCOMPARE(view.deviceText(0), QString("experts 0–1\nstage 0 · group 0"));
    QCOMPARE(view.deviceText(3), QString("experts 2–3\nstage 0 · group 1"));
    QCOMPARE(view.deviceText(6), QString("experts 0–1\nstage 1 · group 1"));
    // The devices holding the same experts look alike; the others do not.
    QCOMPARE(view.deviceColor(0), view.deviceColor(2));
    QCOMPARE(view.deviceColor(0), view.deviceColor(6));
    QVERIFY(view.deviceColor(0) != view.deviceColor(1));
    // Each group outlined around its own devices.
    QCOMPARE(view.groupOutlines().size(), 4);
    for (const TopologyView::GroupOutline& o : view.groupOutlines()) {
      int inside = 0;
      for (const TopologyDevice& d : view.topology().devices)
        for (const QRectF& r : o.rects)
          if (r.contains(d.rect.center())) {
            const ExpertPlacement& e = view.expertsPerDevice()[d.index];
            QCOMPARE(e.stage, o.stage);
            QCOMPARE(e.group, o.group);
            ++inside;
          }
      QCOMPARE(inside, 2);
    }
    QVERIFY(view.legendText().contains("Experts"));
    QVERIFY2(view.selectionText().contains("All-to-all"), qPrintable(view.selectionText()));
    // Stage colouring is still there, and a plan without experts has no expert colouring.
    view.setHeatMap(TopologyView::HeatMap::Stage);
    QCOMPARE(view.heatMap(), TopologyView::HeatMap::Stage);
    QVERIFY(view.groupOutlines().isEmpty());
  }
};

UNITY_VIEWS_SUITE(ExpertViewsTests);
#include "test_expert_views.moc"
