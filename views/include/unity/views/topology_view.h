#pragma once
// The topology view: the machine's nodes, islands, devices and links with their bandwidths; each
// device coloured by the chosen plan's memory use or load (a heat map); and, for the selected
// operator, the devices it runs on and the links its communication crosses, highlighted.
#include <QList>
#include <QWidget>

#include <memory>
#include <set>

#include "unity/core/plan/plan.h"
#include "unity/views/topology_layout.h"

class QButtonGroup;
class QComboBox;
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
  enum class HeatMap { Memory, Load, Stage };

  explicit TopologyView(ExplorerDocument* document, QWidget* parent = nullptr);

  void setHeatMap(HeatMap map);
  HeatMap heatMap() const { return heatMap_; }
  // Per device: memory use / capacity, or busy time / the busiest device's (both in [0, ...]).
  const QList<double>& heat() const { return heat_; }
  const QList<double>& memoryPerDevice() const { return memory_; }
  const QList<double>& busySecondsPerDevice() const { return busy_; }
  // Per device: its pipeline stage (-1: the plan is not pipelined or leaves the device idle).
  const QList<int>& stagePerDevice() const { return stage_; }
  QColor deviceColor(int device) const;  // as drawn now
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
