#pragma once
// The substitution table of the search view: one row per rule (everywhere) and per rule at a node
// (RULE@NODE, the form `unity optimize --pin/--veto` takes), each with one tri-state decision:
// pin (apply wherever it matches), neutral (the search decides) or veto (never apply). pins() and
// vetoes() feed OptimizeOptions, so the next search honours them. Statistics columns show what the
// last search did with each rule.
#include <QAbstractTableModel>
#include <QHash>
#include <QList>
#include <QString>
#include <QStringList>

#include "unity/core/plan/plan.h"
#include "unity/core/rules/rule.h"
#include "unity/core/search/substitution_search.h"
#include "unity/views/search_runner.h"

namespace unity::views {

class SubstitutionModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum class Decision { Veto = -1, Neutral = 0, Pin = 1 };
  enum Column {
    DecisionColumn,
    RuleColumn,
    WhereColumn,
    KindColumn,
    MatchesColumn,
    CostedColumn,
    ImprovedColumn,
    AppliedColumn,
    DescriptionColumn,
    ColumnCount
  };
  static constexpr int DecisionRole = Qt::UserRole + 1;  // the decision as int (-1, 0, 1)
  static constexpr int SortRole = Qt::UserRole + 2;

  explicit SubstitutionModel(QObject* parent = nullptr);

  void setRules(const RuleSet& rules);  // one row per rule, all neutral; drops match rows
  const RuleSet& rules() const { return rules_; }
  // The row of `rule` at `node` (empty: everywhere), added neutral after its rule's rows when new.
  // -1 when no rule has that name.
  int addLocation(const QString& rule, const QString& node);
  bool removeLocation(int row);  // match rows only
  int rowOf(const QString& rule, const QString& node = {}) const;
  QString ruleAt(int row) const;
  QString nodeAt(int row) const;

  void setDecision(int row, Decision decision);
  Decision decision(int row) const;
  void resetDecisions();
  QStringList pins() const;  // "RULE" or "RULE@NODE", in row order
  QStringList vetoes() const;

  void setMatchCounts(const QHash<QString, int>& byLocation);  // keyed "RULE" / "RULE@NODE"
  void setActivity(const QHash<QString, RuleActivity>& byRule);
  void setApplied(const Plan* plan);  // the applications in the plan the last search returned
  void clearStatistics();

  static QString decisionName(Decision d);
  static bool decisionFromName(const QString& name, Decision* out);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

 signals:
  void decisionsChanged();

 private:
  struct Row {
    QString rule;
    QString node;  // empty: everywhere
    QString kind;
    QString description;
    Decision decision = Decision::Neutral;
    int matches = -1;  // -1: not counted
    int costed = 0;
    int improved = 0;
    int applied = 0;
    // The RULE[@NODE] text --pin and --veto take (core's RuleLocation).
    QString key() const {
      return QString::fromStdString(
          to_string(RuleLocation{rule.toStdString(), node.toStdString()}));
    }
  };
  void emitRowsChanged(int first, int last);

  RuleSet rules_;
  QList<Row> rows_;
};

}  // namespace unity::views
