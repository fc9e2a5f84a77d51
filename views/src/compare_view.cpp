#include "unity/views/compare_view.h"

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QSplitter>
#include <QVBoxLayout>

#include "category_colors.h"
#include "legend.h"
#include "unity/views/cost_breakdown_bars.h"
#include "unity/views/display_format.h"
#include "unity/views/explorer_document.h"
#include "unity/views/graph_canvas.h"
#include "unity/views/graph_view.h"
#include "unity/views/pipeline_plan_panel.h"
#include "unity/views/pipeline_timeline_chart.h"
#include "unity/views/project_session.h"
#include "unity/views/search_runner.h"
#include "unity/views/timeline_view.h"

namespace unity::views {

namespace {

void fillModes(QComboBox* box) {
  for (const QString& mode : ExplorerDocument::modes())
    box->addItem(ExplorerDocument::modeTitle(mode), mode);
}

QString shortTitle(const QString& mode) {
  if (mode == QLatin1String("joint")) return QObject::tr("Joint");
  if (mode == QLatin1String("sequential")) return QObject::tr("Sequential");
  if (mode == QLatin1String("data-parallel")) return QObject::tr("Data parallel");
  return ExplorerDocument::modeTitle(mode);
}

}  // namespace

CompareView::CompareView(ExplorerDocument* document, QWidget* parent, LayoutService* service)
    : QWidget(parent),
      document_(document),
      left_(new GraphView(this, service)),
      right_(new GraphView(this, service)),
      leftMode_(new QComboBox(this)),
      rightMode_(new QComboBox(this)),
      leftHeader_(new QLabel(this)),
      rightHeader_(new QLabel(this)),
      status_(new QLabel(this)),
      syncZoom_(new QCheckBox(tr("Synchronise zoom"), this)),
      bars_(new CostBreakdownBars(this)),
      leftPipeline_(new PipelinePlanPanel(Qt::Vertical, /*measuredRow=*/false, this)),
      rightPipeline_(new PipelinePlanPanel(Qt::Vertical, /*measuredRow=*/false, this)),
      differences_(new QListWidget(this)),
      leftRunner_(new SearchRunner(this)),
      rightRunner_(new SearchRunner(this)) {
  setObjectName(QStringLiteral("compareView"));
  fillModes(leftMode_);
  fillModes(rightMode_);
  leftMode_->setCurrentIndex(leftMode_->findData(QStringLiteral("sequential")));
  rightMode_->setCurrentIndex(rightMode_->findData(QStringLiteral("joint")));
  syncZoom_->setChecked(true);
  for (QLabel* h : {leftHeader_, rightHeader_}) {
    h->setTextFormat(Qt::RichText);
    h->setWordWrap(true);
    h->setStyleSheet(QStringLiteral("padding: 3px 6px;"));
  }
  leftHeader_->setObjectName(QStringLiteral("leftHeader"));
  rightHeader_->setObjectName(QStringLiteral("rightHeader"));
  status_->setObjectName(QStringLiteral("compareStatus"));
  differences_->setObjectName(QStringLiteral("differences"));
  differences_->setAlternatingRowColors(true);

  auto* top = new QHBoxLayout;
  top->setContentsMargins(6, 4, 6, 0);
  top->addWidget(new QLabel(tr("Compare"), this));
  top->addWidget(leftMode_);
  top->addWidget(new QLabel(tr("with"), this));
  top->addWidget(rightMode_);
  top->addWidget(syncZoom_);
  top->addWidget(status_, 1);

  auto pane = [this](QLabel* header, GraphView* view, PipelinePlanPanel* pipeline,
                     const QColor& colour) {
    auto* w = new QWidget(this);
    auto* l = new QVBoxLayout(w);
    l->setContentsMargins(0, 0, 0, 0);
    l->setSpacing(0);
    header->setStyleSheet(
        QStringLiteral("padding: 3px 6px; border-top: 4px solid %1;").arg(colour.name()));
    l->addWidget(header);
    l->addWidget(view, 1);
    l->addWidget(pipeline, 1);
    pipeline->hide();
    return w;
  };
  auto* graphs = new QSplitter(Qt::Horizontal, this);
  graphs->addWidget(pane(leftHeader_, left_, leftPipeline_, QColor(0x5c, 0x6b, 0xc0)));
  graphs->addWidget(pane(rightHeader_, right_, rightPipeline_, QColor(0x26, 0xa6, 0x9a)));
  connect(leftPipeline_, &PipelinePlanPanel::timelineReady, this, &CompareView::shareTimeScale);
  connect(rightPipeline_, &PipelinePlanPanel::timelineReady, this, &CompareView::shareTimeScale);

  auto* bottom = new QSplitter(Qt::Horizontal, this);
  bottom->addWidget(bars_);
  auto* diffPane = new QWidget(this);
  auto* diffLayout = new QVBoxLayout(diffPane);
  diffLayout->setContentsMargins(0, 0, 0, 0);
  auto* diffLegend =
      new QLabel(tr("<b>Differences</b> &nbsp;<span style='color:%1'>■ changed</span> "
                    "&nbsp;<span style='color:%2'>■ only in one plan</span>")
                     .arg(changedColor().name(), onlyHereColor().name()),
                 this);
  diffLayout->addWidget(diffLegend);
  diffLayout->addWidget(differences_, 1);
  bottom->addWidget(diffPane);
  bottom->setSizes({620, 600});

  auto* vertical = new QSplitter(Qt::Vertical, this);
  vertical->addWidget(graphs);
  vertical->addWidget(bottom);
  vertical->setStretchFactor(0, 3);
  vertical->setStretchFactor(1, 1);
  vertical->setSizes({520, 210});

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addLayout(top);
  layout->addWidget(vertical, 1);
  layout->addWidget(makeLegend(this));

  connect(leftMode_, &QComboBox::currentIndexChanged, this, [this] {
    refresh();
    if (isVisible()) computeMissingPlans();
  });
  connect(rightMode_, &QComboBox::currentIndexChanged, this, [this] {
    refresh();
    if (isVisible()) computeMissingPlans();
  });
  connect(document_, &ExplorerDocument::planChanged, this, [this] { refresh(); });
  connect(document_, &ExplorerDocument::modelChanged, this, [this] {
    for (SearchRunner* r : {leftRunner_, rightRunner_})
      if (r->isActive()) r->cancel();
    refresh();
    if (isVisible()) computeMissingPlans();
  });
  connect(document_, &ExplorerDocument::machineChanged, this, [this] {
    for (SearchRunner* r : {leftRunner_, rightRunner_})
      if (r->isActive()) r->cancel();
    if (isVisible()) computeMissingPlans();
  });
  connect(document_, &ExplorerDocument::selectionChanged, this, [this](const QString& name) {
    for (GraphView* v : {left_, right_}) {
      const NodeId id = v->nodeByName(name);
      if (id != v->selectedNode()) {
        v->selectNode(id);
        if (id >= 0) v->centerOnNode(id);
      }
    }
  });
  connect(left_, &GraphView::selectionChanged, this, [this] { syncSelection(left_, right_); });
  connect(right_, &GraphView::selectionChanged, this, [this] { syncSelection(right_, left_); });
  connect(left_->canvas(), &GraphCanvas::zoomChanged, this, [this](double z) {
    if (syncing_ || !syncZoom_->isChecked()) return;
    syncing_ = true;
    right_->canvas()->setZoom(z);
    syncing_ = false;
  });
  connect(right_->canvas(), &GraphCanvas::zoomChanged, this, [this](double z) {
    if (syncing_ || !syncZoom_->isChecked()) return;
    syncing_ = true;
    left_->canvas()->setZoom(z);
    syncing_ = false;
  });
  // Once both drawings exist, give them the same zoom (the smaller) so sizes compare.
  for (GraphView* v : {left_, right_})
    connect(v, &GraphView::layoutFinished, this, [this] {
      if (!syncZoom_->isChecked() || left_->layoutPending() || right_->layoutPending() ||
          !left_->layout() || !right_->layout())
        return;
      syncing_ = true;
      const double z = std::min(left_->canvas()->zoom(), right_->canvas()->zoom());
      left_->canvas()->setZoom(z);
      right_->canvas()->setZoom(z);
      syncing_ = false;
      emit busyChanged(busy());
    });
  connect(differences_, &QListWidget::currentTextChanged, this, [this](const QString& line) {
    const QString name = line.section(QLatin1Char(':'), 0, 0).section(QStringLiteral(" ("), 0, 0);
    if (!name.isEmpty()) document_->setSelectedName(name);
  });
  for (SearchRunner* r : {leftRunner_, rightRunner_}) {
    connect(r, &SearchRunner::finished, this, [this, r](std::shared_ptr<const Plan> plan) {
      if (plan->summary.model == (document_->model() ? document_->model()->name : std::string()))
        document_->setPlan(r->mode(), plan);
      emit busyChanged(busy());
    });
    connect(r, &SearchRunner::failed, this, [this](const QString& message) {
      status_->setText(tr("<span style='color:#d32f2f'>%1</span>").arg(message.toHtmlEscaped()));
      emit busyChanged(busy());
    });
    connect(r, &SearchRunner::progress, this, [this] { updateHeaders(); });
  }
  refresh();
}

QString CompareView::leftMode() const { return leftMode_->currentData().toString(); }
QString CompareView::rightMode() const { return rightMode_->currentData().toString(); }
bool CompareView::syncZoom() const { return syncZoom_->isChecked(); }

bool CompareView::busy() const {
  return leftRunner_->isActive() || rightRunner_->isActive() || left_->layoutPending() ||
         right_->layoutPending();
}

void CompareView::setModes(const QString& left, const QString& right) {
  leftMode_->setCurrentIndex(leftMode_->findData(left));
  rightMode_->setCurrentIndex(rightMode_->findData(right));
}

SearchRunner* CompareView::runnerFor(const QString& mode) {
  for (SearchRunner* r : {leftRunner_, rightRunner_})
    if (r->isActive() && r->mode() == mode) return r;
  return nullptr;
}

bool CompareView::computeMissingPlans() {
  const auto model = document_->model();
  const auto machine = document_->machine();
  if (!model || !machine) return false;
  bool started = false;
  const std::pair<QString, SearchRunner*> sides[] = {{leftMode(), leftRunner_},
                                                     {rightMode(), rightRunner_}};
  for (const auto& [mode, runner] : sides) {
    if (document_->plan(mode) || runnerFor(mode) || runner->isActive()) continue;
    // The same search the search view would run: the table's pins and vetoes, recorded in the
    // open project (whose measured operator times it then uses).
    OptimizeOptions options;
    options.mode = mode.toStdString();
    options.budget = budget_;
    for (const QString& p : document_->pins()) options.pins.push_back(p.toStdString());
    for (const QString& v : document_->vetoes()) options.vetoes.push_back(v.toStdString());
    ProjectSession* project = document_->project();
    runner->setRecording(project->isOpen() ? project->file() : QString(), document_->modelSpec());
    started = runner->start(model, machine, options) || started;
  }
  updateHeaders();
  if (started) emit busyChanged(true);
  return started;
}

void CompareView::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  computeMissingPlans();
}

void CompareView::refresh() {
  const auto lp = document_->plan(leftMode());
  const auto rp = document_->plan(rightMode());
  if (lp != leftPlan_) {
    leftPlan_ = lp;
    // (a pipelined plan's serial model is not laid out: its pictures replace it)
    left_->setGraph(lp && !lp->pipeline ? std::shared_ptr<const Graph>(lp, &lp->pcg) : nullptr);
  }
  if (rp != rightPlan_) {
    rightPlan_ = rp;
    // (a pipelined plan's serial model is not laid out: its pictures replace it)
    right_->setGraph(rp && !rp->pipeline ? std::shared_ptr<const Graph>(rp, &rp->pcg) : nullptr);
  }
  // A pipelined plan's PCG is its serial model: its timeline and memory say more.
  for (auto [plan, view, panel] :
       {std::tuple(lp, left_, leftPipeline_), std::tuple(rp, right_, rightPipeline_)}) {
    const bool pipelined = plan && plan->pipeline;
    panel->setPlan(plan);
    panel->setVisible(pipelined);
    view->setVisible(!pipelined);
  }
  shareTimeScale();
  diff_ = (lp && rp) ? diffPlans(*lp, *rp) : PlanDiff();
  left_->setNodeMarks(diff_.left);
  right_->setNodeMarks(diff_.right);
  differences_->clear();
  const bool layouts = (lp && lp->pipeline) || (rp && rp->pipeline);
  if (lp && rp && layouts) {
    // Pipelined plans share the serial PCG: what differs is the layout around it.
    diff_ = PlanDiff();
    differences_->addItems(pipelineDifferences(*lp, *rp));
  } else {
    differences_->addItems(diff_.lines);
  }
  if (lp && rp && differences_->count() == 0)
    differences_->addItem(tr("The two plans are the same."));
  bars_->setPlans(lp.get(), shortTitle(leftMode()), rp.get(), shortTitle(rightMode()));
  updateHeaders();
}

QStringList CompareView::pipelineDifferences(const Plan& left, const Plan& right) {
  // A plan without a pipeline is one stage of one micro-batch, its devices all data-parallel.
  const auto layout = [](const Plan& p) {
    PipelinePlan out;
    if (p.pipeline) return *p.pipeline;
    out.data_parallel = p.summary.devices;
    return out;
  };
  const PipelinePlan a = layout(left), b = layout(right);
  QStringList out;
  const auto knob = [&out](const QString& name, const QString& x, const QString& y) {
    if (x != y) out << tr("%1: %2 → %3").arg(name, x, y);
  };
  const auto n = [](auto v) { return QString::number(v); };
  knob(tr("tensor parallel"), n(a.tensor_parallel), n(b.tensor_parallel));
  knob(tr("pipeline stages"), n(a.pipeline_stages), n(b.pipeline_stages));
  knob(tr("data parallel"), n(a.data_parallel), n(b.data_parallel));
  knob(tr("micro-batches"), n(a.micro_batches), n(b.micro_batches));
  knob(tr("micro-batch size"), n(a.micro_batch_size), n(b.micro_batch_size));
  knob(tr("chunks per device"), n(a.interleave), n(b.interleave));
  knob(tr("recomputation"), QString::fromStdString(std::string(to_string(a.recompute))),
       QString::fromStdString(std::string(to_string(b.recompute))));
  knob(tr("ZeRO stage"), n(a.zero_stage), n(b.zero_stage));
  knob(tr("sequence parallel"), a.sequence_parallel ? tr("on") : tr("off"),
       b.sequence_parallel ? tr("on") : tr("off"));
  knob(tr("bubble"), QStringLiteral("%1%").arg(a.bubble_fraction * 100, 0, 'f', 1),
       QStringLiteral("%1%").arg(b.bubble_fraction * 100, 0, 'f', 1));
  return out;
}

void CompareView::shareTimeScale() {
  PipelineTimelineChart* l = leftPipeline_->predictedChart();
  PipelineTimelineChart* r = rightPipeline_->predictedChart();
  const bool both = leftPipeline_->showsPipeline() && rightPipeline_->showsPipeline() &&
                    l->hasTimeline() && r->hasTimeline();
  const double scale = both ? std::max(l->timeline().end(), r->timeline().end()) : 0;
  l->setTimeScale(scale);
  r->setTimeScale(scale);
}

void CompareView::updateHeaders() {
  const auto header = [this](const QString& mode, const std::shared_ptr<const Plan>& plan,
                             SearchRunner* runner) {
    if (plan) {
      const auto& s = plan->summary;
      QStringList applied;
      for (const auto& a : s.substitutions_applied) applied << QString::fromStdString(a.rule);
      applied.removeDuplicates();
      if (plan->pipeline)
        return tr("<b>%1</b>: %2 per iteration · %3 sent · %4")
            .arg(ExplorerDocument::modeTitle(mode), formatMs(s.iteration_time_ms),
                 formatBytes(s.communication_bytes), pipelineLayoutText(*plan->pipeline));
      return tr("<b>%1</b>: %2 per iteration · %3 sent · %4 compute + %5 parallel operators%6")
          .arg(ExplorerDocument::modeTitle(mode), formatMs(s.iteration_time_ms),
               formatBytes(s.communication_bytes))
          .arg(s.operators)
          .arg(s.parallel_operators)
          .arg(applied.isEmpty()
                   ? QString()
                   : tr("<br><small>rewrites: %1</small>").arg(applied.join(QStringLiteral(", "))));
    }
    if (runner->isActive() && runner->mode() == mode)
      return tr("<b>%1</b>: searching… %2 candidates")
          .arg(ExplorerDocument::modeTitle(mode))
          .arg(runner->snapshot().candidates);
    return tr("<b>%1</b>: no plan yet").arg(ExplorerDocument::modeTitle(mode));
  };
  leftHeader_->setText(header(leftMode(), leftPlan_, leftRunner_));
  rightHeader_->setText(
      header(rightMode(), rightPlan_, rightRunner_->isActive() ? rightRunner_ : leftRunner_));
  if (leftPlan_ && rightPlan_ && (leftPlan_->pipeline || rightPlan_->pipeline))
    status_->setText(tr("%1 layout differences · %2")
                         .arg(differences_->count() == 1 &&
                                      !differences_->item(0)->text().contains(QLatin1Char(':'))
                                  ? 0
                                  : differences_->count())
                         .arg(bars_->verdict()));
  else if (leftPlan_ && rightPlan_)
    status_->setText(tr("%1 changed, %2 only left, %3 only right · %4")
                         .arg(diff_.changed)
                         .arg(diff_.onlyLeft)
                         .arg(diff_.onlyRight)
                         .arg(bars_->verdict()));
  else if (!document_->model())
    status_->setText(tr("Open a model to compare plans."));
  else
    status_->setText(tr("Computing plans…"));
}

void CompareView::syncSelection(GraphView* from, GraphView* to) {
  if (syncing_) return;
  syncing_ = true;
  const NodeId id = from->selectedNode();
  const QString name = id >= 0 && from->graph()
                           ? QString::fromStdString(from->graph()->node(id).op.name)
                           : QString();
  const NodeId other = name.isEmpty() ? -1 : to->nodeByName(name);
  to->selectNode(other);
  if (other >= 0) {
    to->centerOnNode(other);
    from->centerOnNode(id);
  }
  if (!name.isEmpty()) {
    document_->setSelectedName(name);
    const QString line = diff_.lineOf.value(name);
    const auto items = differences_->findItems(line, Qt::MatchExactly);
    if (!line.isEmpty() && !items.isEmpty()) {
      const QSignalBlocker block(differences_);
      differences_->setCurrentItem(items.first());
    }
  }
  syncing_ = false;
}

}  // namespace unity::views
