#include "explorer_settings.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QSettings>
#include <QSpinBox>

#include "unity/core/machine/machine_spec.h"

namespace unity::explorer {

ExplorerSettings ExplorerSettings::load() {
  QSettings s;
  ExplorerSettings e;
  e.machine = s.value(QStringLiteral("machine"), e.machine).toString();
  e.searchBudget = s.value(QStringLiteral("searchBudget"), e.searchBudget).toInt();
  e.searchAlpha = s.value(QStringLiteral("searchAlpha"), e.searchAlpha).toDouble();
  e.dotProcessAbove = s.value(QStringLiteral("dotProcessAbove"), e.dotProcessAbove).toInt();
  e.reopenLastModel = s.value(QStringLiteral("reopenLastModel"), e.reopenLastModel).toBool();
  return e;
}

void ExplorerSettings::save() const {
  QSettings s;
  s.setValue(QStringLiteral("machine"), machine);
  s.setValue(QStringLiteral("searchBudget"), searchBudget);
  s.setValue(QStringLiteral("searchAlpha"), searchAlpha);
  s.setValue(QStringLiteral("dotProcessAbove"), dotProcessAbove);
  s.setValue(QStringLiteral("reopenLastModel"), reopenLastModel);
}

SettingsDialog::SettingsDialog(const ExplorerSettings& settings, QWidget* parent)
    : QDialog(parent),
      machine_(new QComboBox(this)),
      budget_(new QSpinBox(this)),
      alpha_(new QDoubleSpinBox(this)),
      dotAbove_(new QSpinBox(this)),
      reopen_(new QCheckBox(tr("Reopen the last model at start"), this)) {
  setWindowTitle(tr("Settings"));
  for (const std::string& p : machine_preset_names()) machine_->addItem(QString::fromStdString(p));
  machine_->setCurrentText(settings.machine);
  budget_->setRange(1, 1000000);
  budget_->setValue(settings.searchBudget);
  alpha_->setRange(1.0, 3.0);
  alpha_->setDecimals(2);
  alpha_->setSingleStep(0.01);
  alpha_->setValue(settings.searchAlpha);
  dotAbove_->setRange(0, 100000);
  dotAbove_->setSuffix(tr(" nodes"));
  dotAbove_->setValue(settings.dotProcessAbove);
  dotAbove_->setToolTip(
      tr("Graphs with more nodes are laid out by a separate dot process, which a new "
         "request or Cancel stops at once"));
  reopen_->setChecked(settings.reopenLastModel);
  auto* form = new QFormLayout(this);
  form->addRow(tr("Machine for new windows:"), machine_);
  form->addRow(tr("Search budget (candidates):"), budget_);
  form->addRow(tr("Search α:"), alpha_);
  form->addRow(tr("Lay out in a dot process above:"), dotAbove_);
  form->addRow(reopen_);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
  connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  form->addRow(buttons);
}

ExplorerSettings SettingsDialog::settings() const {
  ExplorerSettings e;
  e.machine = machine_->currentText();
  e.searchBudget = budget_->value();
  e.searchAlpha = alpha_->value();
  e.dotProcessAbove = dotAbove_->value();
  e.reopenLastModel = reopen_->isChecked();
  return e;
}

}  // namespace unity::explorer
