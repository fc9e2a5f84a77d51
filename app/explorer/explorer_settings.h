#pragma once
// The explorer's preferences, kept with QSettings (never written by --screenshot runs), and the
// dialog that edits them.
#include <QDialog>
#include <QString>

class QComboBox;
class QDoubleSpinBox;
class QSpinBox;
class QCheckBox;

namespace unity::explorer {

struct ExplorerSettings {
  QString machine = QStringLiteral("summit");  // the machine a new window starts with
  int searchBudget = 200;
  double searchAlpha = 1.05;
  int dotProcessAbove = 400;  // nodes: bigger graphs are laid out by a killable `dot` process
  bool reopenLastModel = true;

  static ExplorerSettings load();
  void save() const;
};

class SettingsDialog : public QDialog {
  Q_OBJECT

 public:
  explicit SettingsDialog(const ExplorerSettings& settings, QWidget* parent = nullptr);
  ExplorerSettings settings() const;

 private:
  QComboBox* machine_;
  QSpinBox* budget_;
  QDoubleSpinBox* alpha_;
  QSpinBox* dotAbove_;
  QCheckBox* reopen_;
};

}  // namespace unity::explorer
