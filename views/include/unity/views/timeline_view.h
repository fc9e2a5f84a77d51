#pragma once
// The timeline view: the chosen plan's pipeline schedule as a Gantt chart (core's
// predicted_timeline: one row per stage, a box per forward and backward pass of every
// micro-batch), and under it the timeline a run of the plan measured, on the same time scale, once
// the document has one. A plan without a pipeline gets a message saying so. The timeline is
// simulated off the GUI thread (QtConcurrent); only the painting is the GUI's.
#include <QFutureWatcher>
#include <QWidget>

#include <memory>

#include "unity/core/pipeline/pipeline_schedule.h"
#include "unity/core/plan/plan.h"

class QLabel;
class QPushButton;

namespace unity::views {

class ExplorerDocument;
class PipelineTimelineChart;
class PlanChooser;

class TimelineView : public QWidget {
  Q_OBJECT

 public:
  explicit TimelineView(ExplorerDocument* document, QWidget* parent = nullptr);
  ~TimelineView() override;

  PipelineTimelineChart* predictedChart() const { return predicted_; }
  PipelineTimelineChart* measuredChart() const { return measured_; }
  PlanChooser* chooser() const { return chooser_; }
  std::shared_ptr<const Plan> shownPlan() const { return plan_; }
  QString layoutText() const;     // "tp 4 × pp 8 × dp 48 · 32 micro-batches of 1 · ..."
  QString exchangesText() const;  // under the chart: the plan's all-to-alls and K/V exchange
  bool busy() const { return watcher_.isRunning(); }

 signals:
  void busyChanged(bool busy);

 private:
  struct Simulated {
    std::shared_ptr<const Plan> plan;
    PipelineTimeline timeline;
    QString error;
  };
  void display();
  void onSimulated();
  void showMeasurement();

  ExplorerDocument* document_;
  PlanChooser* chooser_;
  QLabel* layout_;
  QLabel* exchanges_;
  QPushButton* export_;
  PipelineTimelineChart* predicted_;
  PipelineTimelineChart* measured_;
  std::shared_ptr<const Plan> plan_;
  QFutureWatcher<Simulated> watcher_;
  bool pending_ = false;  // another plan was chosen while one was simulated
};

// "tp 4 × pp 8 × dp 48 · 32 micro-batches of 1 · 5 chunks per device · recompute full · ZeRO 0"
// (with "ep 64 (edp 2) · deepep" and "cp 2 (p2p)" where the plan has them)
QString pipelineLayoutText(const PipelinePlan& p);
// What a plan's expert all-to-alls and context-parallel exchange cost per iteration, from the
// plan's figures (the busiest stage's seconds, how many of them exposed, the bytes and how many
// cross nodes); empty for a plan without them.
QString exchangesText(const PipelinePlan& p);

}  // namespace unity::views
