#pragma once
// The topology view: the machine's nodes, islands, devices and links with their bandwidths; each
// device coloured by the chosen plan's memory use or load (a heat map); and, for the selected
// operator, the devices it runs on and the links its communication crosses, highlighted. A
// pipelined plan's devices can be coloured by stage, and a mixture-of-experts plan's by the
// experts they hold: one colour per place in an expert-parallel group (devices holding the same
// experts look alike), each group outlined and labelled, one group's all-to-all links drawn and
// the all-to-all's bytes and seconds written under the drawing.
#include <QList>
#include <QWidget>

#include <memory>
#include <set>

#include "unity/core/pipeline/expert_placement.h"
#include "unity/core/plan/plan.h"
#include "unity/views/topology_layout.h"

class QButtonGroup;
class QComboBox;
class QGraphicsItem;
class QGraphicsScene;
class QGraphicsView;
class QGraphicsPathItem;
class QGraphicsRectItem;
class QGraphicsSimpleTextItem;
class QLabel;
class QSortFilterProxyModel;
class QTableView;

namespace unity::views {

class ExplorerDocument;
class OperatorTableModel;

class TopologyView : public QWidget {
  Q_OBJECT

 public:
  // Stage: a pipelined plan's devices by pipeline stage (one colour each, legend with the layers).
  // Experts: a mixture-of-experts plan's devices by the experts they hold (expert_placement.h).
  enum class HeatMap { Memory, Load, Stage, Experts };

  explicit TopologyView(ExplorerDocument* document, QWidget* parent = nullptr);

  void setHeatMap(HeatMap map);
  HeatMap heatMap() const { return heatMap_; }
  // Per device: memory use / capacity, or busy time / the busiest device's (both in [0, ...]).
  const QList<double>& heat() const { return heat_; }
  const QList<double>& memoryPerDevice() const { return memory_; }
  const QList<double>& busySecondsPerDevice() const { return busy_; }
  // Per device: its pipeline stage (-1: the plan is not pipelined or leaves the device idle).
  const QList<int>& stagePerDevice() const { return stage_; }
  // Per device: where it sits among the experts (stage -1: not a pipelined plan, or idle).
  const QList<ExpertPlacement>& expertsPerDevice() const { return experts_; }
  // Each expert-parallel group's outlines (scene coordinates) and label, as drawn now.
  struct GroupOutline {
    int stage = 0, group = 0;
    QList<QRectF> rects;
    QString label;
  };
  const QList<GroupOutline>& groupOutlines() const { return outlines_; }
  QColor deviceColor(int device) const;  // as drawn now
  QString deviceText(int device) const;  // the text inside its box, as drawn now
  QString legendText() const;

  void selectOperator(NodeId id);  // in the shown plan's PCG; -1 clears
  NodeId selectedOperator() const { return selected_; }
  const std::set<int>& highlightedDevices() const { return devices_; }
  const std::set<int>& highlightedLinks() const { return links_; }
  QString selectionText() const;

  const TopologyLayout& topology() const { return layout_; }
  std::shared_ptr<const Plan> shownPlan() const { return plan_; }
  QString shownMode() const { return shownMode_; }
  void showMode(const QString& mode);
  QGraphicsView* canvas() const { return canvas_; }
  QTableView* operatorTable() const { return table_; }
  OperatorTableModel* operatorModel() const { return model_; }

 protected:
  void resizeEvent(QResizeEvent* event) override;

 private:
  void rebuildChooser();
  void display(const QString& mode);
  void rebuildScene();
  void computeHeat();
  void paintState();
  void followDocumentSelection(const QString& name);
  void fitCanvas();
  void rebuildOverlays();  // the expert groups' outlines and the all-to-all's links
  QString expertsText() const;

  ExplorerDocument* document_;
  std::shared_ptr<const MachineSpec> machine_;
  std::shared_ptr<const Plan> plan_;
  QString shownMode_;
  bool userChose_ = false;
  bool updatingChooser_ = false;
  HeatMap heatMap_ = HeatMap::Memory;
  TopologyLayout layout_;
  QList<double> heat_, memory_, busy_;
  QList<int> stage_;
  QList<ExpertPlacement> experts_;
  QList<GroupOutline> outlines_;
  std::set<int> alltoallLinks_;  // one expert group's all-to-all: the links it crosses
  int columnStep_ = 1;           // nodes an expert group spans: whole groups in a row of nodes
  double overlayUnit_ = 1;       // the overlays' line width, grown with the drawing
  QRectF overlayBounds_;         // the drawing and the groups' labels left of it
  QList<QGraphicsItem*> overlayItems_;
  bool heatChosen_ = false;  // the user picked a colouring: keep it across plans
  NodeId selected_ = -1;
  std::set<int> devices_;
  std::set<int> links_;

  QComboBox* chooser_;
  QButtonGroup* heatButtons_;
  QLabel* rampLabel_;
  QWidget* ramp_;
  QLabel* legend_;
  QLabel* selection_;
  QGraphicsScene* scene_;
  QGraphicsView* canvas_;
  QTableView* table_;
  OperatorTableModel* model_;
  QSortFilterProxyModel* proxy_;
  QList<QGraphicsRectItem*> deviceItems_;
  QList<QGraphicsSimpleTextItem*> deviceTexts_;
  QList<QGraphicsPathItem*> linkItems_;
};

}  // namespace unity::views
