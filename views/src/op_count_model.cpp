#include "unity/views/op_count_model.h"

#include <QColor>

#include <algorithm>
#include <map>

#include "category_colors.h"

namespace unity::views {

namespace {
QString toQString(std::string_view s) { return QString::fromUtf8(s.data(), qsizetype(s.size())); }
}  // namespace

OpCountModel::OpCountModel(QObject* parent) : QAbstractTableModel(parent) {}

void OpCountModel::setGraph(const Graph& graph) {
  std::map<OpType, qint64> counts;
  for (const auto& [id, node] : graph.nodes()) ++counts[node.op.type];

  QList<Entry> entries;
  entries.reserve(static_cast<qsizetype>(counts.size()));
  for (const auto& [type, count] : counts) entries.append({type, op_info(type).category, count});
  // Most frequent first; equal counts by enum order, so the table is stable from one load to the next.
  std::stable_sort(entries.begin(), entries.end(),
                   [](const Entry& a, const Entry& b) { return a.count > b.count; });

  beginResetModel();
  entries_ = std::move(entries);
  endResetModel();
}

void OpCountModel::clear() {
  beginResetModel();
  entries_.clear();
  endResetModel();
}

qint64 OpCountModel::countOf(OpType type) const {
  for (const Entry& e : entries_) {
    if (e.type == type) return e.count;
  }
  return 0;
}

int OpCountModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(entries_.size());
}

int OpCountModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant OpCountModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const Entry& e = entries_.at(index.row());
  switch (role) {
    case Qt::DisplayRole:
      switch (index.column()) {
        case TypeColumn: return toQString(to_string(e.type));
        case CategoryColumn: return categoryName(e.category);
        case CountColumn: return e.count;  // a number, so a sort proxy orders it numerically
      }
      break;
    case Qt::DecorationRole:
      if (index.column() == TypeColumn) return categoryColor(e.category);
      break;
    case Qt::TextAlignmentRole:
      if (index.column() == CountColumn) return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
      break;
    case OpTypeRole:
      return static_cast<int>(e.type);
  }
  return {};
}

QVariant OpCountModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case TypeColumn: return tr("Operator");
    case CategoryColumn: return tr("Category");
    case CountColumn: return tr("Count");
  }
  return {};
}

QString OpCountModel::categoryName(OpCategory category) {
  switch (category) {
    case OpCategory::Source: return tr("source");
    case OpCategory::Compute: return tr("compute");
    case OpCategory::Parallel: return tr("parallel");
  }
  return {};
}

}  // namespace unity::views
