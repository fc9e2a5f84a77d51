#include "unity/views/run_view.h"

#include <QLabel>
#include <QVBoxLayout>

#include "unity/views/display_format.h"
#include "unity/views/explorer_document.h"

namespace unity::views {

RunView::RunView(ExplorerDocument* document, QWidget* parent)
    : QWidget(parent), document_(document), label_(new QLabel(this)) {
  setObjectName(QStringLiteral("runView"));
  label_->setAlignment(Qt::AlignCenter);
  label_->setWordWrap(true);
  label_->setTextFormat(Qt::RichText);
  label_->setObjectName(QStringLiteral("runMessage"));
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(label_);
  connect(document_, &ExplorerDocument::planChanged, this, &RunView::refresh);
  connect(document_, &ExplorerDocument::modelChanged, this, &RunView::refresh);
  refresh();
}

QString RunView::text() const { return label_->text(); }

void RunView::refresh() {
  QString plan;
  const QString mode = document_->bestMode();
  if (!mode.isEmpty()) {
    const auto& s = document_->plan(mode)->summary;
    plan =
        tr("<p>The plan a run would use: <b>%1</b>, predicted %2 per iteration on %3 devices.</p>")
            .arg(ExplorerDocument::modeTitle(mode), formatMs(s.iteration_time_ms))
            .arg(s.devices);
  }
  label_->setText(
      tr("<h2>Training runs are coming</h2>"
         "<p>Launching the selected plan (CPU or CUDA backend, ranks, iterations) with live "
         "per-iteration time and loss, measured against predicted, arrives with the executor.</p>"
         "%1<p>Meanwhile, <code>unity optimize MODEL --machine P --out plan.json</code> "
         "writes the plan with every operator's devices and predicted costs.</p>")
          .arg(plan));
}

}  // namespace unity::views
