#pragma once
// The search view's large-model layout controls: pin the pipeline depth, the micro-batch count,
// the tensor-parallel replica size, activation recomputation and the ZeRO stage to one value, or
// leave each "searched"; allow or veto pipeline parallelism as a whole; and ask for plans a
// launcher takes, any one's or one framework's. They fill core's LayoutRequest
// (training_setup.h) and OptimizeOptions::pipelines, the same knobs as `unity optimize --pp
// --micro-batches --tp --recompute --zero --no-pipeline --launchable --launcher F`.
//
// A LayoutRequest fixes a value or searches all of them: vetoing a single value ("anything but 8
// stages") has no field, so the panel offers pin or searched per knob and a veto of pipelines.
#include <QWidget>

#include "unity/core/pipeline/training_setup.h"

class QCheckBox;
class QComboBox;
class QSpinBox;

namespace unity::views {

class LayoutRequestPanel : public QWidget {
  Q_OBJECT

 public:
  explicit LayoutRequestPanel(QWidget* parent = nullptr);

  LayoutRequest request() const;
  bool pipelinesAllowed() const;
  void setRequest(const LayoutRequest& request);
  void setPipelinesAllowed(bool allowed);
  // "--pp 2 --micro-batches 4" (empty: everything searched), for the status line.
  QString describe() const;

  QSpinBox* stagesBox() const { return stages_; }
  QSpinBox* microBatchesBox() const { return microBatches_; }
  QSpinBox* tensorParallelBox() const { return tensorParallel_; }
  QComboBox* recomputeBox() const { return recompute_; }
  QComboBox* zeroBox() const { return zero_; }
  QCheckBox* pipelinesBox() const { return pipelines_; }
  QComboBox* launcherBox() const { return launcher_; }

 signals:
  void changed();

 private:
  // The recomputation combo's items: the level as their data, the modules of selective
  // recomputation beyond the attention's (--recompute-modules) in this role.
  static constexpr int kModulesRole = Qt::UserRole + 1;
  // Adds "selective (NAMES)" and returns its index.
  int addRecomputeModules(const std::string& names);

  QSpinBox* stages_;
  QSpinBox* microBatches_;
  QSpinBox* tensorParallel_;
  QComboBox* recompute_;
  QComboBox* zero_;
  QCheckBox* pipelines_;
  QComboBox* launcher_;
};

}  // namespace unity::views
