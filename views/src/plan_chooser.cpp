#include "unity/views/plan_chooser.h"

#include "unity/views/display_format.h"
#include "unity/views/explorer_document.h"

namespace unity::views {

PlanChooser::PlanChooser(ExplorerDocument* document, QWidget* parent)
    : QComboBox(parent), document_(document) {
  setSizeAdjustPolicy(QComboBox::AdjustToContents);
  connect(this, &QComboBox::currentIndexChanged, this, [this](int index) {
    if (updating_ || index < 0) return;
    userChose_ = true;
    rebuild();
  });
  connect(document_, &ExplorerDocument::planChanged, this, &PlanChooser::rebuild);
  connect(document_, &ExplorerDocument::modelChanged, this, [this] {
    userChose_ = false;
    rebuild();
  });
  rebuild();
}

std::shared_ptr<const Plan> PlanChooser::plan() const {
  return mode_.isEmpty() ? nullptr : document_->plan(mode_);
}

void PlanChooser::choose(const QString& mode) {
  userChose_ = true;
  const int index = findData(mode);
  if (index >= 0) setCurrentIndex(index);
}

void PlanChooser::rebuild() {
  QString want = currentData().toString();
  if (!userChose_ || !document_->plan(want)) want = document_->bestPipelinedMode();
  updating_ = true;
  clear();
  for (const QString& mode : document_->planModes()) {
    const auto p = document_->plan(mode);
    QString text = tr("%1 — %2").arg(ExplorerDocument::modeTitle(mode),
                                     formatMs(p->summary.iteration_time_ms));
    if (p->pipeline)
      text += tr(" (%1 stages × %2 micro-batches)")
                  .arg(p->pipeline->pipeline_stages)
                  .arg(p->pipeline->micro_batches);
    addItem(text, mode);
  }
  if (count() == 0) addItem(tr("(no plan yet)"), QString());
  const int index = findData(want);
  setCurrentIndex(index < 0 ? 0 : index);
  updating_ = false;
  const QString mode = currentData().toString();
  const auto p = mode.isEmpty() ? nullptr : document_->plan(mode);
  if (mode == mode_ && p == shown_) return;
  mode_ = mode;
  shown_ = p;
  emit planChosen(mode_);
}

}  // namespace unity::views
