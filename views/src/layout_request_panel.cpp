#include "unity/views/layout_request_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QSpinBox>

#include "unity/core/errors.h"
#include "unity/core/launch/launch_limits.h"

namespace unity::views {

namespace {
// A count that is pinned when above zero and searched at zero (the LayoutRequest convention).
QSpinBox* countBox(int maximum, const QString& tip, QWidget* parent) {
  auto* box = new QSpinBox(parent);
  box->setRange(0, maximum);
  box->setSpecialValueText(QObject::tr("searched"));
  box->setToolTip(tip);
  box->setAccelerated(true);
  return box;
}
}  // namespace

LayoutRequestPanel::LayoutRequestPanel(QWidget* parent)
    : QWidget(parent),
      stages_(
          countBox(4096, tr("Pipeline stages (--pp): pinned to this depth, or searched"), this)),
      microBatches_(countBox(1 << 20,
                             tr("Micro-batches per iteration (--micro-batches): pinned, or "
                                "searched"),
                             this)),
      tensorParallel_(
          countBox(1024, tr("Devices of one stage replica (--tp): pinned, or searched"), this)),
      recompute_(new QComboBox(this)),
      zero_(new QComboBox(this)),
      pipelines_(new QCheckBox(tr("Pipelines"), this)),
      launcher_(new QComboBox(this)) {
  setObjectName(QStringLiteral("layoutRequest"));
  stages_->setObjectName(QStringLiteral("pinStages"));
  microBatches_->setObjectName(QStringLiteral("pinMicroBatches"));
  tensorParallel_->setObjectName(QStringLiteral("pinTensorParallel"));
  recompute_->setObjectName(QStringLiteral("pinRecompute"));
  zero_->setObjectName(QStringLiteral("pinZero"));
  launcher_->setObjectName(QStringLiteral("launcher"));
  launcher_->addItem(tr("any plan"), QString());
  launcher_->addItem(tr("launchable"), QStringLiteral("any"));
  for (launch::Framework f : launch::kFrameworks)
    launcher_->addItem(QString::fromUtf8(launch::display_name(f).data()),
                       QString::fromUtf8(launch::to_string(f).data()));
  launcher_->setToolTip(
      tr("Plan only what a launcher takes: any framework's (--launchable: each layer split as "
         "Megatron-LM splits it, stages of whole layers), or one framework's with its own "
         "limits too (--launcher F); the plan then exports as it is"));
  recompute_->addItem(tr("searched"), QString());
  for (Recompute r : {Recompute::None, Recompute::Selective, Recompute::Full}) {
    const QString name = QString::fromStdString(std::string(to_string(r)));
    recompute_->addItem(name, name);
  }
  // Megatron-Core's modules as its mixture-of-experts recipes name them (--recompute-modules).
  for (const RecomputeModules& modules : kMoeRecipeRecomputeModules)
    addRecomputeModules(to_string(modules));
  // Sized to its short items: the modules' longer names show whole in the list.
  recompute_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  recompute_->setMinimumContentsLength(9);
  recompute_->setToolTip(
      tr("Activation recomputation (--recompute, --recompute-modules): pinned, or searched"));
  zero_->addItem(tr("searched"), -1);
  for (int z = 0; z <= 3; ++z) zero_->addItem(QString::number(z), z);
  zero_->setToolTip(
      tr("ZeRO stage (--zero): 1 shards the optimizer state, 2 also the gradients, 3 also the "
         "weights (0-1 with pipelines); pinned, or searched"));
  pipelines_->setChecked(true);
  pipelines_->setToolTip(
      tr("Offer pipeline layouts to models with a chain of layers (large models); unchecked "
         "vetoes pipeline parallelism (--no-pipeline)"));

  auto* row = new QHBoxLayout(this);
  row->setContentsMargins(6, 0, 6, 0);
  row->addWidget(pipelines_);
  row->addSpacing(6);
  const auto add = [&](const QString& label, QWidget* w) {
    row->addWidget(new QLabel(label, this));
    row->addWidget(w);
  };
  add(tr("Stages:"), stages_);
  add(tr("Micro-batches:"), microBatches_);
  add(tr("Tensor parallel:"), tensorParallel_);
  add(tr("Recompute:"), recompute_);
  add(tr("ZeRO:"), zero_);
  add(tr("Launch:"), launcher_);
  row->addStretch(1);

  for (QSpinBox* b : {stages_, microBatches_, tensorParallel_})
    connect(b, &QSpinBox::valueChanged, this, &LayoutRequestPanel::changed);
  for (QComboBox* b : {recompute_, zero_})
    connect(b, &QComboBox::currentIndexChanged, this, &LayoutRequestPanel::changed);
  connect(launcher_, &QComboBox::currentIndexChanged, this, &LayoutRequestPanel::changed);
  connect(pipelines_, &QCheckBox::toggled, this, [this](bool on) {
    for (QWidget* w : std::initializer_list<QWidget*>{stages_, microBatches_, tensorParallel_,
                                                      recompute_, zero_, launcher_})
      w->setEnabled(on);
    emit changed();
  });
}

LayoutRequest LayoutRequestPanel::request() const {
  LayoutRequest r;
  if (!pipelinesAllowed()) return r;
  r.pipeline_stages = stages_->value();
  r.micro_batches = microBatches_->value();
  r.tensor_parallel = tensorParallel_->value();
  const int i = recompute_->currentIndex();
  r.set_recompute(recompute_->itemData(i).toString().toStdString(),
                  recompute_->itemData(i, kModulesRole).toString().toStdString());
  r.zero_stage = zero_->currentData().toInt();
  const QString launcher = launcher_->currentData().toString();
  if (launcher == QStringLiteral("any")) {
    r.launchable = true;
  } else if (!launcher.isEmpty()) {
    try {
      launch::limit_to_launcher(r, launch::framework_from_string(launcher.toStdString()));
    } catch (const InputError&) {
      // A pin the framework lacks (Megatron-Core's recomputation modules): any launcher's plan,
      // whose launch line then says what stops this one.
      r.launchable = true;
    }
  }
  return r;
}

bool LayoutRequestPanel::pipelinesAllowed() const { return pipelines_->isChecked(); }

void LayoutRequestPanel::setRequest(const LayoutRequest& r) {
  stages_->setValue(r.pipeline_stages);
  microBatches_->setValue(r.micro_batches);
  tensorParallel_->setValue(r.tensor_parallel);
  const QString level =
      r.recompute ? QString::fromStdString(std::string(to_string(*r.recompute))) : QString();
  const QString modules = r.recompute == Recompute::Selective && !r.recompute_modules.is_default()
                              ? QString::fromStdString(to_string(r.recompute_modules))
                              : QString();
  int index = -1;
  for (int i = 0; i < recompute_->count() && index < 0; ++i)
    if (recompute_->itemData(i).toString() == level &&
        recompute_->itemData(i, kModulesRole).toString() == modules)
      index = i;
  // Modules no preset names (a plan's own) get an item of their own.
  if (index < 0) index = addRecomputeModules(modules.toStdString());
  recompute_->setCurrentIndex(index);
  zero_->setCurrentIndex(zero_->findData(r.zero_stage < 0 ? -1 : r.zero_stage));
  const int launcher =
      launcher_->findData(r.launcher.empty() ? (r.launchable ? QStringLiteral("any") : QString())
                                             : QString::fromStdString(r.launcher));
  launcher_->setCurrentIndex(launcher < 0 ? 0 : launcher);
}

int LayoutRequestPanel::addRecomputeModules(const std::string& names) {
  const RecomputeModules m = recompute_modules_from_string(names);
  recompute_->addItem(QString::fromStdString(describe_recompute(Recompute::Selective, m)),
                      QStringLiteral("selective"));
  const int index = recompute_->count() - 1;
  recompute_->setItemData(index, QString::fromStdString(to_string(m)), kModulesRole);
  return index;
}

void LayoutRequestPanel::setPipelinesAllowed(bool allowed) { pipelines_->setChecked(allowed); }

QString LayoutRequestPanel::describe() const {
  if (!pipelinesAllowed()) return tr("--no-pipeline");
  return QString::fromStdString(request().describe());
}

}  // namespace unity::views
