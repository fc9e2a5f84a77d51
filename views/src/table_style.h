#pragma once
// The look every read-only table of the views shares: whole-row selection, alternating rows, no grid,
// sortable headers, integers with digit grouping, and no dotted focus frame around a single cell (the
// row highlight already shows where the keyboard is).
#include <QHeaderView>
#include <QLocale>
#include <QStyledItemDelegate>
#include <QTableView>

namespace unity::views {

// Models keep numbers as numbers (so proxies sort them numerically and tests read them back exactly);
// grouping digits is presentation and happens here.
class TableDelegate : public QStyledItemDelegate {
 public:
  using QStyledItemDelegate::QStyledItemDelegate;
  QString displayText(const QVariant& value, const QLocale& locale) const override {
    const int type = value.typeId();
    if (type == QMetaType::LongLong || type == QMetaType::Int) {
      QLocale grouped = locale;
      grouped.setNumberOptions(grouped.numberOptions() & ~QLocale::OmitGroupSeparator);
      return grouped.toString(value.toLongLong());
    }
    return QStyledItemDelegate::displayText(value, locale);
  }
  void initStyleOption(QStyleOptionViewItem* option, const QModelIndex& index) const override {
    QStyledItemDelegate::initStyleOption(option, index);
    option->state &= ~QStyle::State_HasFocus;
  }
};

inline void applyReadOnlyTableStyle(QTableView* table) {
  table->setItemDelegate(new TableDelegate(table));
  table->setSortingEnabled(true);
  table->setAlternatingRowColors(true);
  table->setSelectionBehavior(QAbstractItemView::SelectRows);
  table->setSelectionMode(QAbstractItemView::SingleSelection);
  table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table->setShowGrid(false);
  table->setWordWrap(false);
  table->verticalHeader()->hide();
  // Dense rows: these tables run to hundreds of weights (BERT-large has 297).
  table->verticalHeader()->setSectionResizeMode(QHeaderView::Fixed);
  table->verticalHeader()->setDefaultSectionSize(table->fontMetrics().height() + 8);
  table->horizontalHeader()->setHighlightSections(false);
}

}  // namespace unity::views
