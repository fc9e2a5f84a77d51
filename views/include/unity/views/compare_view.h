#pragma once
// The compare view: two plans of the open model side by side (by default sequential, "TASO then
// FlexFlow", against joint, Unity). Selecting an operator selects it in both and centres both on
// it; zooming one zooms the other; operators that differ are marked in both drawings and listed;
// cost breakdown bars compare time, traffic and memory. Pipelined plans show their timelines and
// memory bars per pipeline rank instead of their PCG (the serial model), on one time scale when
// both are pipelined. Missing plans are computed when the view is shown.
#include <QWidget>

#include <memory>

#include "unity/views/plan_diff.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QListWidget;

namespace unity::views {

class CostBreakdownBars;
class ExplorerDocument;
class GraphView;
class LayoutService;
class PipelinePlanPanel;
class SearchRunner;

class CompareView : public QWidget {
  Q_OBJECT

 public:
  explicit CompareView(ExplorerDocument* document, QWidget* parent = nullptr,
                       LayoutService* service = nullptr);

  void setModes(const QString& left, const QString& right);
  QString leftMode() const;
  QString rightMode() const;
  // Starts searches for the plans the two sides need and the document lacks; true when any started.
  bool computeMissingPlans();
  void setBudget(int budget) { budget_ = budget; }

  GraphView* leftView() const { return left_; }
  GraphView* rightView() const { return right_; }
  CostBreakdownBars* bars() const { return bars_; }
  // Pipelined plans: their timelines and memory bars in place of the (serial) PCG.
  PipelinePlanPanel* leftPipeline() const { return leftPipeline_; }
  PipelinePlanPanel* rightPipeline() const { return rightPipeline_; }
  QListWidget* differenceList() const { return differences_; }
  const PlanDiff& diff() const { return diff_; }
  bool syncZoom() const;
  bool busy() const;

 signals:
  void busyChanged(bool busy);

 protected:
  void showEvent(QShowEvent* event) override;

 private:
  void refresh();
  void syncSelection(GraphView* from, GraphView* to);
  void updateHeaders();
  void shareTimeScale();
  // "pipeline stages: 8 → 4", one line per layout knob that differs.
  static QStringList pipelineDifferences(const Plan& left, const Plan& right);
  SearchRunner* runnerFor(const QString& mode);

  ExplorerDocument* document_;
  GraphView* left_;
  GraphView* right_;
  QComboBox* leftMode_;
  QComboBox* rightMode_;
  QLabel* leftHeader_;
  QLabel* rightHeader_;
  QLabel* status_;
  QCheckBox* syncZoom_;
  CostBreakdownBars* bars_;
  PipelinePlanPanel* leftPipeline_;
  PipelinePlanPanel* rightPipeline_;
  QListWidget* differences_;
  PlanDiff diff_;
  std::shared_ptr<const Plan> leftPlan_, rightPlan_;
  SearchRunner* leftRunner_;
  SearchRunner* rightRunner_;
  int budget_ = 200;
  bool syncing_ = false;
};

}  // namespace unity::views
