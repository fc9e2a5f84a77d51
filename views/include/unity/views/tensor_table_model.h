#pragma once
// The tensors that enter and leave a graph: its inputs, its weights and its results (outputs nobody
// consumes), with shapes. Lets users check sizes and batch at a glance and, sorted by elements,
// find the weights that dominate memory.
#include <QAbstractTableModel>
#include <QList>
#include <QString>

#include "unity/core/pcg/graph.h"

namespace unity::views {

class TensorTableModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { KindColumn, NameColumn, ShapeColumn, ElementsColumn, BytesColumn, ColumnCount };
  enum class Kind { Input, Weight, Constant, Output };

  struct Entry {
    Kind kind;
    TensorRef tensor;
    QString name;
    QString shape;  // ParallelTensorShape::to_string(): sizes, degrees, dtype
    qint64 elements;
    qint64 bytes;
  };

  explicit TensorTableModel(QObject* parent = nullptr);

  // Inputs, then weights, then outputs, each in node id order. Keeps no reference to the graph.
  void setGraph(const Graph& graph);
  void clear();
  const QList<Entry>& entries() const { return entries_; }
  qint64 count(Kind kind) const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

  static QString kindName(Kind kind);

 private:
  QList<Entry> entries_;
};

}  // namespace unity::views
