#include "machine_bar.h"

#include <QComboBox>
#include <QDir>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>

#include "unity/core/zoo/model_zoo.h"

namespace unity::explorer {

namespace {
const QString kOtherFile = QStringLiteral("\x01other");  // item data of the "file…" entries
}

MachineBar::MachineBar(QWidget* parent)
    : QWidget(parent),
      model_(new QComboBox(this)),
      machine_(new QComboBox(this)),
      scope_(new QComboBox(this)) {
  model_->setObjectName(QStringLiteral("modelChooser"));
  machine_->setObjectName(QStringLiteral("machineChooser"));
  scope_->setObjectName(QStringLiteral("scopeChooser"));
  for (QComboBox* c : {model_, machine_, scope_})
    c->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  for (const zoo::ModelInfo& m : zoo::models()) {
    const QString name = QString::fromStdString(m.name);
    model_->addItem(name, name);
    model_->setItemData(model_->count() - 1, QString::fromStdString(m.description),
                        Qt::ToolTipRole);
  }
  model_->addItem(tr("File…"), kOtherFile);
  for (const std::string& p : machine_preset_names())
    machine_->addItem(QString::fromStdString(p), QString::fromStdString(p));
  machine_->addItem(tr("File…"), kOtherFile);

  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(4, 0, 4, 0);
  layout->addWidget(new QLabel(tr("Model:"), this));
  layout->addWidget(model_);
  layout->addSpacing(10);
  layout->addWidget(new QLabel(tr("Machine:"), this));
  layout->addWidget(machine_);
  layout->addWidget(scope_);

  connect(model_, &QComboBox::activated, this, [this](int i) {
    if (updating_) return;
    const QString spec = model_->itemData(i).toString();
    if (spec == kOtherFile)
      emit openModelFileRequested();
    else
      emit modelRequested(spec);
  });
  connect(machine_, &QComboBox::activated, this, [this](int i) {
    if (updating_) return;
    const QString spec = machine_->itemData(i).toString();
    if (spec == kOtherFile)
      emit openMachineFileRequested();
    else
      emit machineRequested(spec, MachineSelection{});
  });
  connect(scope_, &QComboBox::activated, this, [this](int i) {
    if (updating_) return;
    const QPoint v = scope_->itemData(i).toPoint();  // x: nodes, y: devices
    emit machineRequested(machineSpec_, MachineSelection{v.x(), v.y()});
  });
}

void MachineBar::showModel(const QString& spec) {
  updating_ = true;
  int i = model_->findData(spec);
  if (i < 0) {
    // A Hugging Face config is named by its folder: every one is config.json.
    const QFileInfo file(spec);
    const QString label = file.fileName() == QLatin1String("config.json")
                              ? file.dir().dirName() + QLatin1String("/config.json")
                          : file.isDir() ? QDir(spec).dirName() + QLatin1Char('/')
                                         : file.fileName();
    model_->insertItem(model_->count() - 1, label, spec);
    model_->setItemData(model_->count() - 2, spec, Qt::ToolTipRole);
    i = model_->count() - 2;
  }
  model_->setCurrentIndex(i);
  updating_ = false;
}

void MachineBar::showMachine(const QString& spec, const MachineSpec& machine,
                             const MachineSelection& selection) {
  updating_ = true;
  machineSpec_ = spec;
  int i = machine_->findData(spec);
  if (i < 0) {
    machine_->insertItem(machine_->count() - 1, QFileInfo(spec).fileName(), spec);
    i = machine_->count() - 2;
  }
  machine_->setCurrentIndex(i);
  fillScopes(machine, selection);
  updating_ = false;
}

void MachineBar::fillScopes(const MachineSpec& m, const MachineSelection& selection) {
  scope_->clear();
  const bool cpu = !m.device_types.empty() && m.device_types[0].kind == "cpu";
  const QString noun = cpu ? tr("ranks") : tr("GPUs");
  // Whole nodes in powers of two up to the cluster, then devices of one node.
  for (int n = 1; n <= std::min(m.max_nodes, 1024); n *= 2)
    scope_->addItem(n == 1 ? tr("1 node (%1 %2)").arg(m.devices_per_node).arg(noun)
                           : tr("%1 nodes (%2 %3)").arg(n).arg(n * m.devices_per_node).arg(noun),
                    QPoint(n, 0));
  const int perNode = cpu ? 16 : m.devices_per_node;
  for (int d = 1; d < perNode; d *= 2) scope_->addItem(tr("%1 %2").arg(d).arg(noun), QPoint(0, d));
  QPoint want(selection.nodes, selection.devices);
  if (want == QPoint(0, 0)) want = QPoint(1, 0);
  int i = scope_->findData(want);
  if (i < 0) {
    scope_->addItem(
        want.x() > 0 ? tr("%1 nodes").arg(want.x()) : tr("%1 %2").arg(want.y()).arg(noun), want);
    i = scope_->count() - 1;
  }
  scope_->setCurrentIndex(i);
}

}  // namespace unity::explorer
