#pragma once
// The toolbar row that says what the plan is for: the model and the machine (a preset or a topology
// file) and how much of it to use (whole nodes or a number of devices, like --nodes and --gpus).
#include <QWidget>

#include "unity/core/machine/machine_spec.h"

class QComboBox;

namespace unity::explorer {

class MachineBar : public QWidget {
  Q_OBJECT

 public:
  explicit MachineBar(QWidget* parent = nullptr);

  // Shows the current choice without emitting anything.
  void showModel(const QString& spec);
  void showMachine(const QString& spec, const MachineSpec& machine,
                   const MachineSelection& selection);

 signals:
  void modelRequested(const QString& spec);
  void openModelFileRequested();
  void machineRequested(const QString& spec, const unity::MachineSelection& selection);
  void openMachineFileRequested();

 private:
  void fillScopes(const MachineSpec& machine, const MachineSelection& selection);

  QComboBox* model_;
  QComboBox* machine_;
  QComboBox* scope_;
  QString machineSpec_;
  bool updating_ = false;
};

}  // namespace unity::explorer
