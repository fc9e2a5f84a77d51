#pragma once
// The memory view: where a device's memory goes under the chosen plan. A pipelined plan gets one
// stacked bar per pipeline rank (weights, gradients, optimizer state, the experts' memory,
// activations in flight, workspace; the plan's rank_memory) against the device's capacity, and,
// after a run of it, the measured breakdown beside each. Other plans get each device's total (the
// cost model's memory_per_device, not broken down) or, on many devices, a sentence with the fullest
// one.
#include <QWidget>

#include <memory>

#include "unity/core/plan/plan.h"

class QLabel;

namespace unity::views {

class ExplorerDocument;
class MemoryBarsChart;
class PlanChooser;

class MemoryView : public QWidget {
  Q_OBJECT

 public:
  // Devices above which a plan without a breakdown gets a sentence instead of a bar per device.
  static constexpr int kMaxTotalBars = 64;

  explicit MemoryView(ExplorerDocument* document, QWidget* parent = nullptr);

  MemoryBarsChart* chart() const { return chart_; }
  PlanChooser* chooser() const { return chooser_; }
  std::shared_ptr<const Plan> shownPlan() const { return plan_; }
  QString noteText() const;
  // The note's sentence on a mixture-of-experts plan's experts: how many a device holds, over how
  // many devices their state is sharded, and their bytes by kind (empty: no experts).
  static QString expertsNote(const PipelinePlan& plan);

 private:
  void display();

  ExplorerDocument* document_;
  PlanChooser* chooser_;
  QLabel* layout_;
  MemoryBarsChart* chart_;
  QLabel* note_;
  std::shared_ptr<const Plan> plan_;
};

// The smallest memory of the plan's devices (what every pipeline rank must fit).
double smallestDeviceMemory(const MachineSpec& machine);

}  // namespace unity::views
