#pragma once
// What the selected node is and costs: operator, attributes, input and output parallel shapes,
// machine view (devices), forward/backward time of one task, communication and memory, from the
// plan the node belongs to. A collapsed block shows its totals instead.
#include <QWidget>

#include "unity/core/pcg/graph.h"
#include "unity/core/plan/plan.h"
#include "unity/views/block_grouping.h"

class QLabel;
class QTreeWidget;
class QTreeWidgetItem;

namespace unity::views {

class PropertyPanel : public QWidget {
  Q_OBJECT

 public:
  explicit PropertyPanel(QWidget* parent = nullptr);

  // `plan` (may be null) must be the plan whose PCG is `graph`.
  void showNode(const Graph& graph, NodeId id, const Plan* plan);
  void showBlock(const Graph& graph, const Block& block, const Plan* plan);
  void clear();

  QString title() const;
  // The value shown for a property ("Type", "Devices", "Forward"), the first one in section order;
  // empty when absent.
  QString value(const QString& property) const;
  QTreeWidget* tree() const { return tree_; }

 private:
  QTreeWidgetItem* section(const QString& name);
  void add(QTreeWidgetItem* section, const QString& property, const QString& value,
           const QString& tip = {});

  QLabel* title_;
  QLabel* subtitle_;
  QTreeWidget* tree_;
};

}  // namespace unity::views
