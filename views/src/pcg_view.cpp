#include "unity/views/pcg_view.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QSplitter>
#include <QVBoxLayout>

#include <algorithm>
#include <map>
#include <vector>

#include "legend.h"
#include "unity/core/cost/published_accuracy.h"
#include "unity/core/launch/launcher_verdicts.h"
#include "unity/core/plan/memory_verdict.h"
#include "unity/views/display_format.h"
#include "unity/views/explorer_document.h"
#include "unity/views/graph_view.h"
#include "unity/views/property_panel.h"
#include "unity/views/timeline_view.h"

namespace unity::views {

namespace {
constexpr int kPanelWidth = 400;
}

PcgView::PcgView(ExplorerDocument* document, QWidget* parent, LayoutService* service)
    : QWidget(parent),
      document_(document),
      graph_(new GraphView(this, service)),
      properties_(new PropertyPanel(this)),
      chooser_(new QComboBox(this)),
      headline_(new QLabel(this)) {
  setObjectName(QStringLiteral("pcgView"));
  chooser_->setObjectName(QStringLiteral("planChooser"));
  chooser_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  headline_->setObjectName(QStringLiteral("planHeadline"));
  headline_->setWordWrap(true);
  headline_->setTextInteractionFlags(Qt::TextSelectableByMouse);

  auto* top = new QHBoxLayout;
  top->setContentsMargins(6, 4, 6, 0);
  top->addWidget(new QLabel(tr("Plan:"), this));
  top->addWidget(chooser_);
  top->addWidget(headline_, 1);

  auto* left = new QWidget(this);
  auto* leftLayout = new QVBoxLayout(left);
  leftLayout->setContentsMargins(0, 0, 0, 0);
  leftLayout->setSpacing(0);
  leftLayout->addWidget(graph_, 1);
  leftLayout->addWidget(makeLegend(left));

  auto* splitter = new QSplitter(Qt::Horizontal, this);
  splitter->addWidget(left);
  splitter->addWidget(properties_);
  splitter->setStretchFactor(0, 1);
  splitter->setStretchFactor(1, 0);
  splitter->setSizes({900, kPanelWidth});

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addLayout(top);
  layout->addWidget(splitter, 1);

  connect(chooser_, &QComboBox::currentIndexChanged, this, [this](int index) {
    if (updatingChooser_ || index < 0) return;
    userChose_ = true;
    display(chooser_->itemData(index).toString());
  });
  connect(document_, &ExplorerDocument::modelChanged, this, [this] {
    userChose_ = false;
    rebuildChooser();
  });
  connect(document_, &ExplorerDocument::planChanged, this, &PcgView::rebuildChooser);
  connect(document_, &ExplorerDocument::selectionChanged, this, &PcgView::followDocumentSelection);
  connect(graph_, &GraphView::selectionChanged, this, [this] {
    updateProperties();
    const NodeId id = graph_->selectedNode();
    if (id >= 0 && graph_->graph())
      document_->setSelectedName(QString::fromStdString(graph_->graph()->node(id).op.name));
  });
  connect(graph_, &GraphView::busyChanged, this, &PcgView::busyChanged);
  rebuildChooser();
}

bool PcgView::busy() const { return graph_->layoutPending(); }

void PcgView::showMode(const QString& mode) {
  userChose_ = true;
  display(mode);
  rebuildChooser();
}

void PcgView::rebuildChooser() {
  updatingChooser_ = true;
  chooser_->clear();
  if (document_->model()) chooser_->addItem(tr("Model (before parallelisation)"), QString());
  for (const QString& mode : document_->planModes()) {
    const auto plan = document_->plan(mode);
    chooser_->addItem(tr("%1 — %2").arg(ExplorerDocument::modeTitle(mode),
                                        formatMs(plan->summary.iteration_time_ms)),
                      mode);
  }
  QString want = shownMode_;
  if (!userChose_ || (!want.isEmpty() && !document_->plan(want))) want = document_->bestMode();
  const int index = chooser_->findData(want);
  chooser_->setCurrentIndex(index < 0 ? 0 : index);
  updatingChooser_ = false;
  if (document_->model())
    display(chooser_->currentData().toString());
  else {
    shownMode_.clear();
    graph_->clear();
    properties_->clear();
    headline_->setText(tr("Open a model (File ▸ Open Zoo Model, or drop an .onnx file here)."));
  }
}

void PcgView::display(const QString& mode) {
  const auto plan = mode.isEmpty() ? nullptr : document_->plan(mode);
  std::shared_ptr<const Graph> graph;
  if (plan)
    graph = std::shared_ptr<const Graph>(plan, &plan->pcg);  // keeps the plan alive
  else
    graph = document_->model();
  const bool same = graph_->graphPtr() == graph && shownMode_ == (plan ? mode : QString());
  shownMode_ = plan ? mode : QString();
  headline_->setText(headline());
  if (same) return;
  graph_->setGraph(graph);
  followDocumentSelection(document_->selectedName());
  updateProperties();
}

QString PcgView::headline() const {
  const auto plan = shownMode_.isEmpty() ? nullptr : document_->plan(shownMode_);
  if (!plan) {
    const auto model = document_->model();
    if (!model) return {};
    return tr("%1: %2 nodes, batch %3. Pick a plan to see how it runs on %4.")
        .arg(QString::fromStdString(model->name))
        .arg(model->size())
        .arg(model->batch_size)
        .arg(document_->machineDescription());
  }
  const auto& s = plan->summary;
  // The rewrites the search applied, most frequent first: what turned the model into this plan.
  std::map<std::string, int> rewrites;
  for (const auto& a : s.substitutions_applied) ++rewrites[a.rule];
  std::vector<std::pair<int, std::string>> byCount;
  for (const auto& [rule, n] : rewrites) byCount.emplace_back(-n, rule);
  std::sort(byCount.begin(), byCount.end());
  QStringList applied;
  for (const auto& [n, rule] : byCount)
    applied << (n < -1 ? QStringLiteral("%1 ×%2").arg(QString::fromStdString(rule)).arg(-n)
                       : QString::fromStdString(rule));
  // A pipelined plan's PCG is the serial model: its layout lives in the pipeline views.
  const QString pipelineText =
      plan->pipeline ? tr("<br>Pipelined (%1): the graph is the serial model; the Timeline and "
                          "Memory views show its stages.")
                           .arg(pipelineLayoutText(*plan->pipeline))
                     : QString();
  // How far this kind of prediction has been from published runs (published_accuracy.h).
  const auto checked =
      published_accuracy_statement(plan->machine, plan->pcg, plan->experts_per_device());
  const QString checkedText =
      checked ? tr("<br>Checked: %1").arg(QString::fromStdString(*checked)) : QString();
  // Which launchers run it as it is (launcher_verdicts.h): a decoder's plan only.
  const auto launchers = launch::launcher_verdicts(*plan);
  const QString launchText =
      launchers
          ? tr("<br>Launch: %1").arg(QString::fromStdString(launchers->describe()).toHtmlEscaped())
          : QString();
  const QString rewriteText = applied.isEmpty()
                                  ? QString()
                                  : tr("<br>Rewrites: %1").arg(applied.join(QStringLiteral(", ")));
  // Fits, tight or not, with the margin (memory_verdict.h); orange and red draw the eye.
  const MemoryVerdict memory =
      plan_memory_verdict(s.peak_memory_bytes, s.fits_in_memory, plan->machine);
  const QString verdict = QString::fromStdString(memory.describe());
  const QString memoryText =
      memory.fit == MemoryFit::Fits
          ? tr(" (%1)").arg(verdict)
          : tr(" <span style='color:%1'><b>(%2)</b></span>")
                .arg(memory.fit == MemoryFit::Tight ? QStringLiteral("#ef6c00")
                                                    : QStringLiteral("#d32f2f"),
                     verdict);
  // A plan that does not fit: how many devices the model's state alone takes (memory_verdict.h).
  const auto floor = memory_floor_statement(*plan);
  const QString floorText =
      floor ? tr("<br>Memory floor: %1").arg(QString::fromStdString(*floor)) : QString();
  return tr("<b>%1</b> per iteration (compute %2, communication %3) · %4 sent · peak memory %5 per "
            "device%6 · "
            "%7 compute + %8 parallel operators on %9 devices")
             .arg(formatMs(s.iteration_time_ms), formatMs(s.compute_ms),
                  formatMs(s.communication_ms), formatBytes(s.communication_bytes),
                  formatBytes(s.peak_memory_bytes), memoryText)
             .arg(s.operators)
             .arg(s.parallel_operators)
             .arg(s.devices) +
         floorText + checkedText + launchText + rewriteText + pipelineText;
}

void PcgView::updateProperties() {
  const Graph* g = graph_->graph();
  const auto plan = shownMode_.isEmpty() ? nullptr : document_->plan(shownMode_);
  if (!g) {
    properties_->clear();
    return;
  }
  if (graph_->selectedBlock() >= 0)
    properties_->showBlock(*g, graph_->blocks().blocks[graph_->selectedBlock()], plan.get());
  else if (graph_->selectedNode() >= 0)
    properties_->showNode(*g, graph_->selectedNode(), plan.get());
  else
    properties_->clear();
}

void PcgView::followDocumentSelection(const QString& name) {
  const NodeId id = name.isEmpty() ? -1 : graph_->nodeByName(name);
  if (id == graph_->selectedNode()) return;
  graph_->selectNode(id);
  if (id >= 0) graph_->centerOnNode(id);
}

}  // namespace unity::views
