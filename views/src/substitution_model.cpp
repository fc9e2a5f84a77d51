#include "unity/views/substitution_model.h"

#include <QColor>

namespace unity::views {

SubstitutionModel::SubstitutionModel(QObject* parent) : QAbstractTableModel(parent) {}

void SubstitutionModel::setRules(const RuleSet& rules) {
  beginResetModel();
  rules_ = rules;
  rows_.clear();
  for (const Rule& r : rules_.rules)
    rows_.append(Row{QString::fromStdString(r.name),
                     {},
                     QString::fromUtf8(to_string(r.kind)),
                     QString::fromStdString(r.description)});
  endResetModel();
  emit decisionsChanged();
}

int SubstitutionModel::rowOf(const QString& rule, const QString& node) const {
  for (qsizetype i = 0; i < rows_.size(); ++i)
    if (rows_[i].rule == rule && rows_[i].node == node) return int(i);
  return -1;
}

QString SubstitutionModel::ruleAt(int row) const { return rows_.value(row).rule; }
QString SubstitutionModel::nodeAt(int row) const { return rows_.value(row).node; }

int SubstitutionModel::addLocation(const QString& rule, const QString& node) {
  const int existing = rowOf(rule, node);
  if (existing >= 0) return existing;
  const int ruleRow = rowOf(rule);
  if (ruleRow < 0) return -1;
  int at = ruleRow + 1;
  while (at < rows_.size() && rows_[at].rule == rule) ++at;
  Row r = rows_[ruleRow];
  r.node = node;
  r.decision = Decision::Neutral;
  r.matches = -1;
  r.costed = r.improved = r.applied = 0;
  beginInsertRows({}, at, at);
  rows_.insert(at, r);
  endInsertRows();
  return at;
}

bool SubstitutionModel::removeLocation(int row) {
  if (row < 0 || row >= rows_.size() || rows_[row].node.isEmpty()) return false;
  const bool mattered = rows_[row].decision != Decision::Neutral;
  beginRemoveRows({}, row, row);
  rows_.removeAt(row);
  endRemoveRows();
  if (mattered) emit decisionsChanged();
  return true;
}

void SubstitutionModel::setDecision(int row, Decision decision) {
  if (row < 0 || row >= rows_.size() || rows_[row].decision == decision) return;
  rows_[row].decision = decision;
  emitRowsChanged(row, row);
  emit decisionsChanged();
}

SubstitutionModel::Decision SubstitutionModel::decision(int row) const {
  return row >= 0 && row < rows_.size() ? rows_[row].decision : Decision::Neutral;
}

void SubstitutionModel::resetDecisions() {
  for (Row& r : rows_) r.decision = Decision::Neutral;
  if (!rows_.isEmpty()) emitRowsChanged(0, int(rows_.size()) - 1);
  emit decisionsChanged();
}

QStringList SubstitutionModel::pins() const {
  QStringList out;
  for (const Row& r : rows_)
    if (r.decision == Decision::Pin) out << r.key();
  return out;
}

QStringList SubstitutionModel::vetoes() const {
  QStringList out;
  for (const Row& r : rows_)
    if (r.decision == Decision::Veto) out << r.key();
  return out;
}

void SubstitutionModel::setMatchCounts(const QHash<QString, int>& byLocation) {
  for (Row& r : rows_) r.matches = byLocation.value(r.key(), -1);
  if (!rows_.isEmpty()) emitRowsChanged(0, int(rows_.size()) - 1);
}

void SubstitutionModel::setActivity(const QHash<QString, RuleActivity>& byRule) {
  for (Row& r : rows_) {
    if (!r.node.isEmpty()) continue;  // the search reports by rule
    r.costed = byRule.value(r.rule).costed;
    r.improved = byRule.value(r.rule).newBests;
  }
  if (!rows_.isEmpty()) emitRowsChanged(0, int(rows_.size()) - 1);
}

void SubstitutionModel::setApplied(const Plan* plan) {
  for (Row& r : rows_) {
    r.applied = 0;
    if (!plan) continue;
    for (const AppliedSubstitution& a : plan->summary.substitutions_applied) {
      if (QString::fromStdString(a.rule) != r.rule) continue;
      bool here = r.node.isEmpty();
      for (const std::string& n : a.nodes) here = here || QString::fromStdString(n) == r.node;
      r.applied += here ? 1 : 0;
    }
  }
  if (!rows_.isEmpty()) emitRowsChanged(0, int(rows_.size()) - 1);
}

void SubstitutionModel::clearStatistics() {
  for (Row& r : rows_) r.costed = r.improved = r.applied = 0;
  if (!rows_.isEmpty()) emitRowsChanged(0, int(rows_.size()) - 1);
}

QString SubstitutionModel::decisionName(Decision d) {
  switch (d) {
    case Decision::Pin:
      return QStringLiteral("pin");
    case Decision::Veto:
      return QStringLiteral("veto");
    default:
      return QStringLiteral("neutral");
  }
}

bool SubstitutionModel::decisionFromName(const QString& name, Decision* out) {
  const QString n = name.trimmed().toLower();
  if (n == QLatin1String("pin"))
    *out = Decision::Pin;
  else if (n == QLatin1String("veto"))
    *out = Decision::Veto;
  else if (n == QLatin1String("neutral"))
    *out = Decision::Neutral;
  else
    return false;
  return true;
}

int SubstitutionModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : int(rows_.size());
}

int SubstitutionModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : ColumnCount;
}

QVariant SubstitutionModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rows_.size() || index.column() >= ColumnCount) return {};
  const Row& r = rows_[index.row()];
  if (role == DecisionRole) return int(r.decision);
  if (index.column() == DecisionColumn) {
    switch (role) {
      case Qt::DisplayRole:
      case Qt::EditRole:
        return decisionName(r.decision);
      case Qt::BackgroundRole:
        if (r.decision == Decision::Pin) return QColor(0xc8, 0xe6, 0xc9);
        if (r.decision == Decision::Veto) return QColor(0xff, 0xcd, 0xd2);
        return {};
      case Qt::ToolTipRole:
        return tr(
            "pin: apply wherever it matches · neutral: the search decides · veto: never apply "
            "(double-click, or press P, N or V)");
      case SortRole:
        return int(r.decision);
      default:
        return {};
    }
  }
  if (role == Qt::TextAlignmentRole && index.column() >= MatchesColumn &&
      index.column() <= AppliedColumn)
    return int(Qt::AlignRight | Qt::AlignVCenter);
  if (role == Qt::ToolTipRole && index.column() == DescriptionColumn) return r.description;
  if (role != Qt::DisplayRole && role != SortRole) return {};
  switch (index.column()) {
    case RuleColumn:
      return r.rule;
    case WhereColumn:
      return r.node.isEmpty() ? tr("everywhere") : tr("at %1").arg(r.node);
    case KindColumn:
      return r.kind;
    case MatchesColumn:
      return r.matches < 0 ? QVariant(QStringLiteral("")) : QVariant(r.matches);
    case CostedColumn:
      return r.costed;
    case ImprovedColumn:
      return r.improved;
    case AppliedColumn:
      return r.applied;
    case DescriptionColumn:
      return r.description;
    default:
      return {};
  }
}

bool SubstitutionModel::setData(const QModelIndex& index, const QVariant& value, int role) {
  if (!index.isValid() || index.column() != DecisionColumn || index.row() >= rows_.size())
    return false;
  if (role != Qt::EditRole && role != DecisionRole) return false;
  Decision d;
  if (value.typeId() == QMetaType::QString) {
    if (!decisionFromName(value.toString(), &d)) return false;
  } else {
    bool ok = false;
    const int v = value.toInt(&ok);
    if (!ok || v < -1 || v > 1) return false;
    d = Decision(v);
  }
  setDecision(index.row(), d);
  return true;
}

Qt::ItemFlags SubstitutionModel::flags(const QModelIndex& index) const {
  if (!index.isValid()) return Qt::NoItemFlags;
  Qt::ItemFlags f = Qt::ItemIsEnabled | Qt::ItemIsSelectable | Qt::ItemNeverHasChildren;
  if (index.column() == DecisionColumn) f |= Qt::ItemIsEditable;
  return f;
}

QVariant SubstitutionModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal) return {};
  if (role == Qt::ToolTipRole) {
    switch (section) {
      case MatchesColumn:
        return tr("Places the rule matches in the model");
      case CostedColumn:
        return tr("Candidates the last search built with this rule and costed");
      case ImprovedColumn:
        return tr("Of which beat the best plan so far");
      case AppliedColumn:
        return tr("Applications in the plan the last search returned");
      default:
        return {};
    }
  }
  if (role != Qt::DisplayRole) return {};
  switch (section) {
    case DecisionColumn:
      return tr("Decision");
    case RuleColumn:
      return tr("Rule");
    case WhereColumn:
      return tr("Where");
    case KindColumn:
      return tr("Kind");
    case MatchesColumn:
      return tr("Matches");
    case CostedColumn:
      return tr("Costed");
    case ImprovedColumn:
      return tr("Improved");
    case AppliedColumn:
      return tr("In plan");
    case DescriptionColumn:
      return tr("Description");
    default:
      return {};
  }
}

void SubstitutionModel::emitRowsChanged(int first, int last) {
  emit dataChanged(index(first, 0), index(last, ColumnCount - 1));
}

}  // namespace unity::views
