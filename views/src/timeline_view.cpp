#include "unity/views/timeline_view.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QMenu>
#include <QPushButton>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include <algorithm>

#include "unity/core/pipeline/expert_placement.h"
#include "unity/core/pipeline/training_setup.h"
#include "unity/views/display_format.h"
#include "unity/views/explorer_document.h"
#include "unity/views/pipeline_timeline_chart.h"
#include "unity/views/plan_chooser.h"

namespace unity::views {

QString pipelineLayoutText(const PipelinePlan& p) {
  QStringList parts;
  parts << QObject::tr("tp %1 × pp %2 × dp %3")
               .arg(p.tensor_parallel)
               .arg(p.pipeline_stages)
               .arg(p.data_parallel);
  if (p.expert_parallel > 1)
    parts << QObject::tr("ep %1%2 (edp %3) · %4")
                 .arg(p.expert_parallel)
                 .arg(p.expert_tensor_parallel > 1
                          ? QObject::tr(" × etp %1").arg(p.expert_tensor_parallel)
                          : QString())
                 .arg(p.expert_data_parallel)
                 .arg(p.token_dispatcher == TokenDispatcher::DeepEp ? QObject::tr("DeepEP")
                                                                    : QObject::tr("all-to-all"));
  if (p.context_parallel > 1)
    parts << QObject::tr("cp %1 (%2)")
                 .arg(p.context_parallel)
                 .arg(QString::fromStdString(std::string(to_string(p.context_exchange))));
  parts
      << (p.micro_batches == 1
              ? QObject::tr("1 micro-batch of %1").arg(p.micro_batch_size)
              : QObject::tr("%1 micro-batches of %2").arg(p.micro_batches).arg(p.micro_batch_size));
  if (p.interleave > 1) parts << QObject::tr("%1 chunks per device").arg(p.interleave);
  parts << QObject::tr("recompute %1")
               .arg(QString::fromStdString(std::string(to_string(p.recompute))));
  parts << QObject::tr("ZeRO %1").arg(p.zero_stage);
  if (p.sequence_parallel) parts << QObject::tr("sequence parallel");
  return parts.join(QStringLiteral(" · "));
}

QString exchangesText(const PipelinePlan& p) {
  QStringList lines;
  const auto share = [](double part, double whole) {
    return whole > 0 ? qRound(100 * part / whole) : 0;
  };
  if (p.alltoall_time > 0) {
    const AlltoallTraffic t = alltoall_traffic(p);
    lines << QObject::tr(
                 "<b>All-to-all</b> (dispatch and combine in every MoE layer, forward and "
                 "backward; %1 experts, top %2, over ep %3): stage %4, the busiest, spends "
                 "%5 an iteration in them, <b>%6 exposed</b> (%7% of the iteration)%8; all "
                 "devices send %9 an iteration, %10% of it across nodes.")
                 .arg(p.experts)
                 .arg(p.top_k)
                 .arg(p.expert_parallel)
                 .arg(t.busiest_rank)
                 .arg(formatMs(t.seconds * 1e3), formatMs(t.exposed * 1e3))
                 .arg(share(t.exposed, p.iteration_time))
                 .arg(p.ep_comm_overlap ? QObject::tr(", the rest behind another micro-batch")
                                        : QObject::tr(", none overlapped"))
                 .arg(formatBytes(t.bytes))
                 .arg(share(t.inter_node_bytes, t.bytes));
  }
  if (p.expert_slice_time > 0)
    lines << QObject::tr(
                 "<b>Expert slices</b> (expert tensor parallelism %1): each expert's %1 "
                 "devices gather the routed tokens and reduce-scatter the outputs, %2 an "
                 "iteration on the busiest stage beyond a dense MLP's split, inside its "
                 "passes (%3% of the iteration).")
                 .arg(p.expert_tensor_parallel)
                 .arg(formatMs(p.expert_slice_time * 1e3))
                 .arg(share(p.expert_slice_time, p.iteration_time));
  if (p.cp_time > 0)
    lines << QObject::tr(
                 "<b>K/V exchange</b> (context parallelism %1, %2): %3 an iteration "
                 "exposed on the busiest stage (%4% of the iteration); all devices send "
                 "%5.")
                 .arg(p.context_parallel)
                 .arg(QString::fromStdString(std::string(to_string(p.context_exchange))))
                 .arg(formatMs(p.cp_time * 1e3))
                 .arg(share(p.cp_time, p.iteration_time))
                 .arg(formatBytes(p.cp_bytes));
  return lines.join(QStringLiteral("<br>"));
}

TimelineView::TimelineView(ExplorerDocument* document, QWidget* parent)
    : QWidget(parent),
      document_(document),
      chooser_(new PlanChooser(document, this)),
      layout_(new QLabel(this)),
      exchanges_(new QLabel(this)),
      export_(new QPushButton(tr("Export"), this)),
      predicted_(new PipelineTimelineChart(this)),
      measured_(new PipelineTimelineChart(this)) {
  setObjectName(QStringLiteral("timelineView"));
  predicted_->setObjectName(QStringLiteral("predictedTimeline"));
  measured_->setObjectName(QStringLiteral("measuredTimeline"));
  layout_->setObjectName(QStringLiteral("timelineLayout"));
  layout_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  exchanges_->setObjectName(QStringLiteral("timelineExchanges"));
  exchanges_->setTextFormat(Qt::RichText);
  exchanges_->setWordWrap(true);
  exchanges_->setStyleSheet(QStringLiteral("color: #37474f; padding: 2px 8px 6px 8px;"));
  exchanges_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* menu = new QMenu(export_);
  menu->addAction(tr("Predicted Timeline…"), predicted_, &PipelineTimelineChart::exportWithDialog);
  QAction* measuredExport = menu->addAction(tr("Measured Timeline…"), measured_,
                                            &PipelineTimelineChart::exportWithDialog);
  connect(menu, &QMenu::aboutToShow, this,
          [this, measuredExport] { measuredExport->setEnabled(measured_->hasTimeline()); });
  export_->setMenu(menu);
  export_->setToolTip(tr("Save a timeline as PNG, SVG or a Chrome trace (Perfetto)"));

  auto* top = new QHBoxLayout;
  top->setContentsMargins(6, 4, 6, 0);
  top->addWidget(new QLabel(tr("Plan:"), this));
  top->addWidget(chooser_);
  top->addSpacing(12);
  top->addWidget(layout_, 1);
  top->addWidget(export_);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addLayout(top);
  layout->addWidget(predicted_, 1);
  layout->addWidget(measured_, 1);
  layout->addWidget(exchanges_);
  measured_->hide();
  exchanges_->hide();

  connect(chooser_, &PlanChooser::planChosen, this, &TimelineView::display);
  connect(document_, &ExplorerDocument::measurementChanged, this, &TimelineView::showMeasurement);
  connect(&watcher_, &QFutureWatcher<Simulated>::finished, this, &TimelineView::onSimulated);
  display();
}

TimelineView::~TimelineView() { watcher_.waitForFinished(); }

QString TimelineView::layoutText() const { return layout_->text(); }
QString TimelineView::exchangesText() const { return exchanges_->text(); }

void TimelineView::display() {
  plan_ = chooser_->plan();
  exchanges_->clear();
  exchanges_->hide();
  if (!plan_) {
    layout_->clear();
    predicted_->clear(tr("No plan yet: the timeline appears once a plan is computed."));
    showMeasurement();
    return;
  }
  if (!plan_->pipeline) {
    layout_->setText(tr("no pipeline"));
    predicted_->clear(
        tr("%1 is not a pipelined plan: every device runs every layer, so there is no pipeline "
           "schedule to draw.\nPipelined plans come from large models (gpt-*, llama-*) in joint or "
           "expert mode, or with a pipeline depth pinned in the search view.")
            .arg(ExplorerDocument::modeTitle(QString::fromStdString(plan_->summary.mode))));
    showMeasurement();
    return;
  }
  layout_->setText(pipelineLayoutText(*plan_->pipeline));
  exchanges_->setText(views::exchangesText(*plan_->pipeline));
  exchanges_->setVisible(!exchanges_->text().isEmpty());
  if (watcher_.isRunning()) {
    pending_ = true;  // the result of the running one is dropped, then this plan is simulated
    return;
  }
  const auto plan = plan_;
  watcher_.setFuture(QtConcurrent::run([plan] {
    Simulated s;
    s.plan = plan;
    try {
      s.timeline = predicted_timeline(*plan->pipeline);
    } catch (const std::exception& e) {
      s.error = QString::fromUtf8(e.what());
    }
    return s;
  }));
  emit busyChanged(true);
}

void TimelineView::onSimulated() {
  const Simulated s = watcher_.result();
  if (pending_ || s.plan != plan_) {
    pending_ = false;
    display();
    if (!watcher_.isRunning()) emit busyChanged(false);
    return;
  }
  if (s.error.isEmpty())
    predicted_->setTimeline(
        s.timeline, s.plan && s.plan->pipeline
                        ? PipelineTimelineChart::predictedTitle(s.plan->pipeline->iteration_time)
                        : tr("Predicted"));
  else
    predicted_->clear(tr("Cannot simulate the schedule: %1").arg(s.error));
  showMeasurement();
  emit busyChanged(false);
}

void TimelineView::showMeasurement() {
  const auto m = plan_ ? document_->measurement(*plan_) : nullptr;
  if (!m || m->timeline.boxes.empty()) {
    measured_->clear(QString());
    measured_->hide();
    predicted_->setTimeScale(0);
    return;
  }
  measured_->setTimeline(m->timeline, tr("Measured"));
  measured_->show();
  // One scale for both, so that a longer measured iteration looks longer.
  // The whole iteration: the gradient synchronisation and the optimizer step after the flush.
  const double scale = std::max(m->timeline.end(), predicted_->timeline().end());
  predicted_->setTimeScale(scale);
  measured_->setTimeScale(scale);
}

}  // namespace unity::views
