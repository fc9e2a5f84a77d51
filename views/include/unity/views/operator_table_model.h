#pragma once
// The placed operators of a plan with their devices and costs: the topology view's list (select an
// operator to see where it runs) and a sortable answer to "which operators take the time".
#include <QAbstractTableModel>

#include <memory>

#include "unity/core/plan/plan.h"

namespace unity::views {

class OperatorTableModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column {
    NameColumn,
    TypeColumn,
    DevicesColumn,
    ForwardColumn,
    BackwardColumn,
    CommunicationColumn,
    MemoryColumn,
    ColumnCount
  };
  static constexpr int NodeIdRole = Qt::UserRole + 1;
  static constexpr int SortRole = Qt::UserRole + 2;  // numbers as numbers

  explicit OperatorTableModel(QObject* parent = nullptr);

  void setPlan(std::shared_ptr<const Plan> plan);
  const Plan* plan() const { return plan_.get(); }
  int rowOf(NodeId id) const;  // -1 when the node is not placed
  NodeId nodeAt(int row) const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

 private:
  std::shared_ptr<const Plan> plan_;
};

}  // namespace unity::views
