#pragma once
// How many operators of each type a graph has: one row per distinct OpType, most frequent first.
// The model summary shows it; later the compare view reuses it to diff two plans' operator mixes.
#include <QAbstractTableModel>
#include <QList>

#include "unity/core/pcg/graph.h"
#include "unity/core/pcg/op_type.h"

namespace unity::views {

class OpCountModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { TypeColumn, CategoryColumn, CountColumn, ColumnCount };
  // Data role returning the row's OpType as int, so views and tests need not parse display text.
  static constexpr int OpTypeRole = Qt::UserRole + 1;

  struct Entry {
    OpType type;
    OpCategory category;
    qint64 count;
  };

  explicit OpCountModel(QObject* parent = nullptr);

  // Recounts from the graph (the model keeps no reference to it). Emits a model reset.
  void setGraph(const Graph& graph);
  void clear();
  const QList<Entry>& entries() const { return entries_; }
  // Count of one type; 0 when the graph has none.
  qint64 countOf(OpType type) const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

  static QString categoryName(OpCategory category);

 private:
  QList<Entry> entries_;
};

}  // namespace unity::views
