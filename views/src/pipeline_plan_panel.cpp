#include "unity/views/pipeline_plan_panel.h"

#include <QHBoxLayout>
#include <QSplitter>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include <algorithm>

#include "unity/views/memory_bars_chart.h"
#include "unity/views/memory_view.h"
#include "unity/views/pipeline_timeline_chart.h"

namespace unity::views {

PipelinePlanPanel::PipelinePlanPanel(Qt::Orientation orientation, bool measuredRow, QWidget* parent)
    : QWidget(parent),
      measuredRow_(measuredRow),
      predicted_(new PipelineTimelineChart(this)),
      measured_(new PipelineTimelineChart(this)),
      memory_(new MemoryBarsChart(this)) {
  setObjectName(QStringLiteral("pipelineRunPanel"));
  predicted_->setObjectName(QStringLiteral("runPredictedTimeline"));
  measured_->setObjectName(QStringLiteral("runMeasuredTimeline"));
  auto* timelines = new QWidget(this);
  auto* column = new QVBoxLayout(timelines);
  column->setContentsMargins(0, 0, 0, 0);
  column->setSpacing(2);
  column->addWidget(predicted_, 1);
  column->addWidget(measured_, 1);
  measured_->setVisible(measuredRow);
  auto* split = new QSplitter(orientation, this);
  split->addWidget(timelines);
  split->addWidget(memory_);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(split);
  connect(&watcher_,
          &QFutureWatcher<std::pair<std::shared_ptr<const Plan>, PipelineTimeline>>::finished, this,
          [this] {
            const auto [plan, timeline] = watcher_.result();
            if (plan != plan_) {
              simulate();  // the plan changed meanwhile
              return;
            }
            predicted_->setTimeline(
                timeline, PipelineTimelineChart::predictedTitle(plan->pipeline->iteration_time));
            refresh();
            emit timelineReady();
          });
}

PipelinePlanPanel::~PipelinePlanPanel() { watcher_.waitForFinished(); }

void PipelinePlanPanel::setPlan(std::shared_ptr<const Plan> plan) {
  if (plan == plan_) return;
  plan_ = std::move(plan);
  measurement_.reset();
  predicted_->clear(tr("Simulating the schedule…"));
  simulate();
  refresh();
}

void PipelinePlanPanel::setMeasurement(
    std::shared_ptr<const executor::PipelineMeasurement> measurement) {
  measurement_ = std::move(measurement);
  refresh();
}

void PipelinePlanPanel::simulate() {
  if (!showsPipeline() || watcher_.isRunning()) return;
  const auto plan = plan_;
  watcher_.setFuture(QtConcurrent::run([plan] {
    PipelineTimeline t;
    try {
      t = predicted_timeline(*plan->pipeline);
    } catch (const std::exception&) {
      // A schedule the core cannot simulate shows as an empty timeline.
    }
    return std::pair(plan, t);
  }));
}

QString PipelinePlanPanel::measuredTitle(const executor::PipelineMeasurement& m) {
  // A CPU runs fp16 and bf16 plans in float32: its bytes are not the plan's.
  if (!m.compute_dtype.empty() && m.compute_dtype != m.plan_dtype)
    return tr("Memory per device, predicted (%1) and measured (ran in %2)")
        .arg(QString::fromStdString(m.plan_dtype), QString::fromStdString(m.compute_dtype));
  return tr("Memory per device, predicted (left) and measured (right)");
}

void PipelinePlanPanel::refresh() {
  if (!showsPipeline()) {
    predicted_->clear(tr("Not a pipelined plan"));
    measured_->clear(QString());
    memory_->clear(tr("Not a pipelined plan"));
    return;
  }
  const PipelinePlan& p = *plan_->pipeline;
  const bool measured = measurement_ && !measurement_->timeline.boxes.empty();
  measured_->setVisible(measuredRow_ || measured);
  if (measured)
    measured_->setTimeline(measurement_->timeline, tr("Measured"));
  else
    measured_->clear(tr("Measured: the timeline of the last iteration appears after a run."));
  const double scale =
      measured ? std::max(measurement_->timeline.end(), predicted_->timeline().end()) : 0;
  predicted_->setTimeScale(scale);
  measured_->setTimeScale(scale);
  memory_->setBreakdown(
      p.rank_memory, measurement_ ? measurement_->memory : std::vector<MemoryBreakdown>{},
      smallestDeviceMemory(plan_->machine),
      measurement_ && !measurement_->memory.empty() ? measuredTitle(*measurement_)
                                                    : tr("Predicted memory per device"));
}

}  // namespace unity::views
