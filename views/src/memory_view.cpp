#include "unity/views/memory_view.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QVBoxLayout>

#include <algorithm>

#include "unity/views/display_format.h"
#include "unity/views/explorer_document.h"
#include "unity/views/memory_bars_chart.h"
#include "unity/views/plan_chooser.h"
#include "unity/views/timeline_view.h"

namespace unity::views {

double smallestDeviceMemory(const MachineSpec& machine) {
  double least = 0;
  for (int d = 0; d < machine.num_devices(); ++d) {
    const double bytes = double(machine.device(d).memory_bytes);
    least = d == 0 ? bytes : std::min(least, bytes);
  }
  return least;
}

MemoryView::MemoryView(ExplorerDocument* document, QWidget* parent)
    : QWidget(parent),
      document_(document),
      chooser_(new PlanChooser(document, this)),
      layout_(new QLabel(this)),
      chart_(new MemoryBarsChart(this)),
      note_(new QLabel(this)) {
  setObjectName(QStringLiteral("memoryView"));
  note_->setObjectName(QStringLiteral("memoryNote"));
  note_->setWordWrap(true);
  note_->setStyleSheet(QStringLiteral("color: #37474f; padding: 2px 8px 6px 8px;"));
  layout_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* top = new QHBoxLayout;
  top->setContentsMargins(6, 4, 6, 0);
  top->addWidget(new QLabel(tr("Plan:"), this));
  top->addWidget(chooser_);
  top->addSpacing(12);
  top->addWidget(layout_, 1);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addLayout(top);
  layout->addWidget(chart_, 1);
  layout->addWidget(note_);
  connect(chooser_, &PlanChooser::planChosen, this, &MemoryView::display);
  connect(document_, &ExplorerDocument::measurementChanged, this, &MemoryView::display);
  display();
}

QString MemoryView::noteText() const { return note_->text(); }

QString MemoryView::expertsNote(const PipelinePlan& pp) {
  // The rank whose experts take most, and what they take there by kind.
  const MemoryBreakdown* most = nullptr;
  int rank = 0;
  for (size_t r = 0; r < pp.rank_memory.size(); ++r)
    if (!most || pp.rank_memory[r].experts() > most->experts()) {
      most = &pp.rank_memory[r];
      rank = int(r);
    }
  if (!most || most->experts() <= 0 || pp.experts <= 0) return {};
  const int ep = std::max(1, pp.expert_parallel);
  const int etp = std::max(1, pp.expert_tensor_parallel);
  const QString slice = etp <= 1              ? QString()
                        : pp.experts / ep > 1 ? tr("a 1/%1 slice of each of ").arg(etp)
                                              : tr("a 1/%1 slice of ").arg(etp);
  const QString where =
      ep > 1 ? tr("each device holds %1%2 of each MoE layer's %3 experts (expert parallelism "
                  "%4), the %5 devices holding the same ones reducing their gradients%6")
                   .arg(slice)
                   .arg(pp.experts / ep)
                   .arg(pp.experts)
                   .arg(ep)
                   .arg(pp.expert_data_parallel)
                   .arg(pp.zero_stage >= 1 ? tr(" and sharding their optimizer state") : QString())
      : etp > 1 ? tr("each device holds 1/%1 of every one of the %2 experts of each MoE layer "
                     "(expert tensor parallelism %1, no expert parallelism)")
                      .arg(etp)
                      .arg(pp.experts)
                : tr("each device holds its tensor-parallel share of all %1 experts of each MoE "
                     "layer (no expert parallelism)")
                      .arg(pp.experts);
  return tr(" Experts (yellow): %1; on rank %2 their weights take %3, gradients %4, optimizer "
            "state %5 (%6% of what the device holds).")
      .arg(where)
      .arg(rank)
      .arg(formatBytes(most->expert_weights), formatBytes(most->expert_gradients),
           formatBytes(most->expert_optimizer))
      .arg(most->total() > 0 ? qRound(100 * most->experts() / most->total()) : 0);
}

void MemoryView::display() {
  plan_ = chooser_->plan();
  layout_->clear();
  note_->clear();
  if (!plan_) {
    chart_->clear(tr("No plan yet: the memory per device appears once a plan is computed."));
    return;
  }
  const double capacity = smallestDeviceMemory(plan_->machine);
  const QString device = QString::fromStdString(plan_->machine.device(0).name);
  if (!plan_->pipeline) {
    const auto& perDevice = plan_->mapping.memory_per_device;
    const double peak = perDevice.empty() ? plan_->summary.peak_memory_bytes
                                          : *std::max_element(perDevice.begin(), perDevice.end());
    layout_->setText(tr("not a pipelined plan"));
    if (!perDevice.empty() && int(perDevice.size()) <= kMaxTotalBars) {
      chart_->setTotals(perDevice, capacity, tr("Predicted memory per device"));
      chart_->setRankLabels({});
    } else {
      chart_->clear(tr("Not a pipelined plan: its fullest device keeps %1 of %2 (%3).\nThe "
                       "topology view colours every device by its memory.")
                        .arg(formatBytes(peak), formatBytes(capacity), device));
    }
    note_->setText(
        tr("This plan is not pipelined, so the cost model gives each device's total "
           "(weights, gradients, optimizer state and activations together), not the "
           "breakdown by kind that pipelined plans have."));
    return;
  }
  const PipelinePlan& pp = *plan_->pipeline;
  layout_->setText(pipelineLayoutText(pp));
  const auto measured = document_->measurement(*plan_);
  chart_->setBreakdown(pp.rank_memory, measured ? measured->memory : std::vector<MemoryBreakdown>{},
                       capacity,
                       measured && !measured->memory.empty()
                           ? tr("Memory per device by pipeline rank, predicted (left) and measured "
                                "(right)")
                           : tr("Predicted memory per device by pipeline rank"));
  QStringList labels;
  for (const StagePlan& c : pp.chunks)
    if (c.rank >= labels.size()) labels.resize(c.rank + 1);
  if (pp.interleave == 1)
    for (const StagePlan& c : pp.chunks)
      labels[c.rank] = c.first_layer == c.last_layer
                           ? tr("layer %1").arg(c.first_layer)
                           : tr("layers %1–%2").arg(c.first_layer).arg(c.last_layer);
  chart_->setRankLabels(labels);
  const QString context =
      pp.context_parallel > 1 ? tr(" × %1 context-parallel").arg(pp.context_parallel) : QString();
  QString note = tr("One bar per pipeline rank: each of its %1 devices (%2 tensor-parallel%8 × %3 "
                    "data-parallel) holds the same, a %4. Recomputation %5, ZeRO stage %6; the "
                    "activations are "
                    "those of the micro-batches in flight (up to %7 under 1F1B).")
                     .arg(pp.tensor_parallel * pp.context_parallel * pp.data_parallel)
                     .arg(pp.tensor_parallel)
                     .arg(pp.data_parallel)
                     .arg(device)
                     .arg(QString::fromStdString(std::string(to_string(pp.recompute))))
                     .arg(pp.zero_stage)
                     .arg(std::min(pp.micro_batches, pp.pipeline_stages))
                     .arg(context);
  note += expertsNote(pp);
  if (measured && !measured->memory.empty() && measured->compute_dtype != measured->plan_dtype &&
      !measured->compute_dtype.empty())
    note += tr(" The run computed in %1 (the plan: %2), so its measured bytes differ by that.")
                .arg(QString::fromStdString(measured->compute_dtype),
                     QString::fromStdString(measured->plan_dtype));
  note_->setText(note);
}

}  // namespace unity::views
