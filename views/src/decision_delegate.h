#pragma once
// Edits the substitution table's decision column with a pin / neutral / veto combo box.
#include <QComboBox>
#include <QStyledItemDelegate>

#include "unity/views/substitution_model.h"

namespace unity::views {

class DecisionDelegate : public QStyledItemDelegate {
 public:
  using QStyledItemDelegate::QStyledItemDelegate;

  QWidget* createEditor(QWidget* parent, const QStyleOptionViewItem&,
                        const QModelIndex&) const override {
    auto* combo = new QComboBox(parent);
    combo->addItem(QStringLiteral("pin"), int(SubstitutionModel::Decision::Pin));
    combo->addItem(QStringLiteral("neutral"), int(SubstitutionModel::Decision::Neutral));
    combo->addItem(QStringLiteral("veto"), int(SubstitutionModel::Decision::Veto));
    // Commit as soon as a choice is made: one click less than Enter.
    connect(combo, &QComboBox::activated, combo, [this, combo] {
      emit const_cast<DecisionDelegate*>(this)->commitData(combo);
      emit const_cast<DecisionDelegate*>(this)->closeEditor(combo);
    });
    return combo;
  }
  void setEditorData(QWidget* editor, const QModelIndex& index) const override {
    auto* combo = static_cast<QComboBox*>(editor);
    combo->setCurrentIndex(combo->findData(index.data(SubstitutionModel::DecisionRole)));
  }
  void setModelData(QWidget* editor, QAbstractItemModel* model,
                    const QModelIndex& index) const override {
    model->setData(index, static_cast<QComboBox*>(editor)->currentData(),
                   SubstitutionModel::DecisionRole);
  }
};

}  // namespace unity::views
