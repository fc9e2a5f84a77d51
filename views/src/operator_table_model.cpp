#include "unity/views/operator_table_model.h"

#include "category_colors.h"
#include "unity/views/display_format.h"

namespace unity::views {

OperatorTableModel::OperatorTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void OperatorTableModel::setPlan(std::shared_ptr<const Plan> plan) {
  beginResetModel();
  plan_ = std::move(plan);
  endResetModel();
}

int OperatorTableModel::rowOf(NodeId id) const {
  if (!plan_) return -1;
  const auto& ops = plan_->mapping.per_op;
  for (size_t i = 0; i < ops.size(); ++i)
    if (ops[i].node == id) return int(i);
  return -1;
}

NodeId OperatorTableModel::nodeAt(int row) const {
  if (!plan_ || row < 0 || row >= int(plan_->mapping.per_op.size())) return -1;
  return plan_->mapping.per_op[size_t(row)].node;
}

int OperatorTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() || !plan_ ? 0 : int(plan_->mapping.per_op.size());
}

int OperatorTableModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : ColumnCount;
}

QVariant OperatorTableModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || !plan_ || index.row() >= rowCount()) return {};
  const OpCost& c = plan_->mapping.per_op[size_t(index.row())];
  const Node& n = plan_->pcg.node(c.node);
  if (role == NodeIdRole) return QVariant::fromValue<qint64>(c.node);
  const double comm = (c.own.communication + c.edges.communication) * 1e3;
  if (role == SortRole) {
    switch (index.column()) {
      case DevicesColumn:
        return c.view.num_tasks();
      case ForwardColumn:
        return c.forward;
      case BackwardColumn:
        return c.backward;
      case CommunicationColumn:
        return comm;
      case MemoryColumn:
        return c.memory;
      default:
        return data(index, Qt::DisplayRole);
    }
  }
  if (role == Qt::DecorationRole && index.column() == TypeColumn)
    return categoryColor(op_info(n.op.type).category);
  if (role == Qt::TextAlignmentRole && index.column() >= ForwardColumn)
    return int(Qt::AlignRight | Qt::AlignVCenter);
  if (role != Qt::DisplayRole && role != Qt::ToolTipRole) return {};
  switch (index.column()) {
    case NameColumn:
      return QString::fromStdString(n.op.name);
    case TypeColumn: {
      const auto t = to_string(n.op.type);
      return QString::fromLatin1(t.data(), qsizetype(t.size()));
    }
    case DevicesColumn:
      return formatDevices(c.view.devices());
    case ForwardColumn:
      return formatMs(c.forward * 1e3);
    case BackwardColumn:
      return formatMs(c.backward * 1e3);
    case CommunicationColumn:
      return formatMs(comm);
    case MemoryColumn:
      return formatBytes(c.memory);
    default:
      return {};
  }
}

QVariant OperatorTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case NameColumn:
      return tr("Operator");
    case TypeColumn:
      return tr("Type");
    case DevicesColumn:
      return tr("Devices");
    case ForwardColumn:
      return tr("Forward");
    case BackwardColumn:
      return tr("Backward");
    case CommunicationColumn:
      return tr("Communication");
    case MemoryColumn:
      return tr("Memory");
    default:
      return {};
  }
}

}  // namespace unity::views
