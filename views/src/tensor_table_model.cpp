#include "unity/views/tensor_table_model.h"

#include <QLocale>

#include <algorithm>

#include "category_colors.h"

namespace unity::views {

TensorTableModel::TensorTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void TensorTableModel::setGraph(const Graph& graph) {
  QList<Entry> inputs, weights, outputs;
  const auto entry = [&graph](Kind kind, TensorRef t, const std::string& name) {
    const ParallelTensorShape& shape = graph.shape(t);
    return Entry{kind,
                 t,
                 QString::fromStdString(name),
                 QString::fromStdString(shape.to_string()),
                 qint64(shape.num_elements()),
                 qint64(shape.bytes())};
  };
  for (const auto& [id, node] : graph.nodes()) {
    if (node.op.type == OpType::Input)
      inputs.append(entry(Kind::Input, node.output(), node.op.name));
    if (node.op.type == OpType::Weight)
      weights.append(entry(Kind::Weight, node.output(), node.op.name));
    if (node.op.type == OpType::Constant)
      weights.append(entry(Kind::Constant, node.output(), node.op.name));
  }
  for (const TensorRef& t : graph.sinks()) {
    const Node& node = graph.node(t.node);
    if (is_source_op(node.op.type)) continue;  // an unused input or weight is not a result
    // Multi-output nodes get ":index" so each result is distinguishable.
    const std::string name =
        node.outputs.size() > 1 ? node.op.name + ":" + std::to_string(t.index) : node.op.name;
    outputs.append(entry(Kind::Output, t, name));
  }
  beginResetModel();
  entries_ = inputs + weights + outputs;
  endResetModel();
}

void TensorTableModel::clear() {
  beginResetModel();
  entries_.clear();
  endResetModel();
}

qint64 TensorTableModel::count(Kind kind) const {
  return std::count_if(entries_.begin(), entries_.end(),
                       [kind](const Entry& e) { return e.kind == kind; });
}

int TensorTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(entries_.size());
}

int TensorTableModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : ColumnCount;
}

QVariant TensorTableModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
    return {};
  const Entry& e = entries_.at(index.row());
  switch (role) {
    case Qt::DisplayRole:
      switch (index.column()) {
        case KindColumn:
          return kindName(e.kind);
        case NameColumn:
          return e.name;
        case ShapeColumn:
          return e.shape;
        case ElementsColumn:
          return e.elements;  // numbers, so a sort proxy orders them numerically
        case BytesColumn:
          return e.bytes;
      }
      break;
    case Qt::ToolTipRole:
      if (index.column() == BytesColumn) return QLocale().formattedDataSize(e.bytes);
      break;
    case Qt::DecorationRole:
      if (index.column() == KindColumn) {
        return categoryColor(e.kind == Kind::Output ? OpCategory::Compute : OpCategory::Source);
      }
      break;
    case Qt::TextAlignmentRole:
      if (index.column() == ElementsColumn || index.column() == BytesColumn) {
        return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
      }
      break;
  }
  return {};
}

QVariant TensorTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case KindColumn:
      return tr("Kind");
    case NameColumn:
      return tr("Name");
    case ShapeColumn:
      return tr("Shape");
    case ElementsColumn:
      return tr("Elements");
    case BytesColumn:
      return tr("Bytes");
  }
  return {};
}

QString TensorTableModel::kindName(Kind kind) {
  switch (kind) {
    case Kind::Input:
      return tr("input");
    case Kind::Weight:
      return tr("weight");
    case Kind::Constant:
      return tr("constant");
    case Kind::Output:
      return tr("output");
  }
  return {};
}

}  // namespace unity::views
