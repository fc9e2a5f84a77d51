#pragma once
// A pipelined plan's pictures in one panel: its predicted timeline, optionally the timeline a run
// measured under it (one time scale), and the memory bars per pipeline rank (measured beside
// predicted). The run view shows one (timelines left of the bars); the compare view one per plan
// (timeline above the bars). Hidden by its owner for plans without a pipeline.
#include <QFutureWatcher>
#include <QWidget>

#include <memory>

#include "unity/core/pipeline/pipeline_schedule.h"
#include "unity/core/plan/plan.h"
#include "unity/executor/training.h"

namespace unity::views {

class MemoryBarsChart;
class PipelineTimelineChart;

class PipelinePlanPanel : public QWidget {
  Q_OBJECT

 public:
  // `measuredRow`: keep a row for the measured timeline (the run view).
  explicit PipelinePlanPanel(Qt::Orientation orientation, bool measuredRow,
                             QWidget* parent = nullptr);
  ~PipelinePlanPanel() override;

  // The plan a run would use (null or not pipelined: nothing to show). Its timeline is simulated
  // off the GUI thread.
  void setPlan(std::shared_ptr<const Plan> plan);
  // What a run of that plan measured (null: none yet).
  void setMeasurement(std::shared_ptr<const executor::PipelineMeasurement> measurement);

  bool showsPipeline() const { return plan_ && plan_->pipeline; }
  bool busy() const { return watcher_.isRunning(); }
  PipelineTimelineChart* predictedChart() const { return predicted_; }
  PipelineTimelineChart* measuredChart() const { return measured_; }
  MemoryBarsChart* memoryChart() const { return memory_; }

 signals:
  void timelineReady();  // the predicted timeline is simulated and shown

 private:
  void simulate();
  static QString measuredTitle(const executor::PipelineMeasurement& m);
  void refresh();

  bool measuredRow_;
  std::shared_ptr<const Plan> plan_;
  std::shared_ptr<const executor::PipelineMeasurement> measurement_;
  PipelineTimelineChart* predicted_;
  PipelineTimelineChart* measured_;
  MemoryBarsChart* memory_;
  QFutureWatcher<std::pair<std::shared_ptr<const Plan>, PipelineTimeline>> watcher_;
};

}  // namespace unity::views
