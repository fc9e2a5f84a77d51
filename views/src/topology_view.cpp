#include "unity/views/topology_view.h"

#include <QButtonGroup>
#include <QComboBox>
#include <QGraphicsPathItem>
#include <QGraphicsRectItem>
#include <QGraphicsScene>
#include <QGraphicsSimpleTextItem>
#include <QGraphicsView>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLinearGradient>
#include <QPainter>
#include <QRadioButton>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTableView>
#include <QTimer>
#include <QVBoxLayout>

#include <algorithm>
#include <map>

#include "pipeline_colors.h"
#include "table_style.h"
#include "unity/views/display_format.h"
#include "unity/views/explorer_document.h"
#include "unity/views/operator_table_model.h"

namespace unity::views {

namespace {

QColor heatColor(double t) {
  if (t > 1.0) return QColor(0xb7, 0x1c, 0x1c);
  t = std::clamp(t, 0.0, 1.0);
  const QColor a = t < 0.5 ? QColor(0xff, 0xff, 0xff) : QColor(0xff, 0xf1, 0x76);
  const QColor b = t < 0.5 ? QColor(0xff, 0xf1, 0x76) : QColor(0xef, 0x53, 0x50);
  const double u = t < 0.5 ? t * 2 : (t - 0.5) * 2;
  return QColor::fromRgbF(a.redF() + (b.redF() - a.redF()) * u,
                          a.greenF() + (b.greenF() - a.greenF()) * u,
                          a.blueF() + (b.blueF() - a.blueF()) * u);
}

QPixmap rampPixmap() {
  QPixmap p(120, 14);
  QPainter painter(&p);
  for (int x = 0; x < p.width(); ++x) {
    painter.setPen(heatColor(double(x) / (p.width() - 1)));
    painter.drawLine(x, 0, x, p.height());
  }
  painter.setPen(QColor(0x90, 0xa4, 0xae));
  painter.drawRect(0, 0, p.width() - 1, p.height() - 1);
  return p;
}

// The expert all-to-all's links: the timeline's all-to-all green.
const QColor kAlltoallLink(0x00, 0x89, 0x7b);

// A device's colour by the experts it holds: its place in its expert-parallel group along a
// rainbow, so that the devices holding the same experts share a colour and a group runs through
// all of them.
QColor expertColor(int epRank, int ep) {
  const double t = ep > 1 ? double(epRank) / double(ep - 1) : 0.0;
  return QColor::fromHsvF(0.80 * t, 0.55, 0.97);
}

// The experts first to last of a layer, one or a range.
QString expertRange(std::int64_t first, std::int64_t last) {
  return first == last ? TopologyView::tr("expert %1").arg(first)
                       : TopologyView::tr("experts %1–%2").arg(first).arg(last);
}

QPen linkPen(TopologyLink::Kind kind, bool highlighted) {
  if (highlighted) return QPen(QColor(0xe5, 0x39, 0x35), 5, Qt::SolidLine, Qt::RoundCap);
  switch (kind) {
    case TopologyLink::Kind::IntraIsland:
      return QPen(QColor(0x43, 0xa0, 0x47), 2.5, Qt::SolidLine, Qt::RoundCap);
    case TopologyLink::Kind::InterIsland:
      return QPen(QColor(0x6d, 0x4c, 0x41), 3.5, Qt::SolidLine, Qt::RoundCap);
    case TopologyLink::Kind::InterNode:
      return QPen(QColor(0x15, 0x65, 0xc0), 3, Qt::SolidLine, Qt::RoundCap);
  }
  return {};
}

QString linkText(const LinkSpec& l) {
  return QStringLiteral("%1 · %2").arg(QString::fromStdString(l.name),
                                       formatBandwidth(l.bandwidth));
}

// One line under the toolbar: the devices, and what each link colour is.
QString machineLegendText(const MachineSpec& m) {
  const auto line = [](const QColor& c, const QString& text) {
    return QStringLiteral("<span style='color:%1; font-weight:bold;'>━━</span>&nbsp;%2")
        .arg(c.name(), text);
  };
  const DeviceSpec& d = m.device(0);
  QString text =
      QObject::tr("<b>%1</b> (%2 memory, %3 TFLOP/s fp32) &nbsp;&nbsp; ")
          .arg(QString::fromStdString(d.name).toHtmlEscaped(), formatBytes(double(d.memory_bytes)))
          .arg(d.peak_flops_fp32 / 1e12, 0, 'f', 1);
  text += line(linkPen(TopologyLink::Kind::IntraIsland, false).color(),
               QObject::tr("%1 (inside an island)").arg(linkText(m.intra_island).toHtmlEscaped()));
  if (m.islands_per_node() > 1)
    text += QStringLiteral(" &nbsp;") +
            line(linkPen(TopologyLink::Kind::InterIsland, false).color(),
                 QObject::tr("%1 (between islands)").arg(linkText(m.inter_island).toHtmlEscaped()));
  if (m.num_nodes > 1)
    text += QStringLiteral(" &nbsp;") +
            line(linkPen(TopologyLink::Kind::InterNode, false).color(),
                 QObject::tr("%1 (between nodes)").arg(linkText(m.inter_node).toHtmlEscaped()));
  text += QStringLiteral(" &nbsp;") + line(linkPen(TopologyLink::Kind::InterNode, true).color(),
                                           QObject::tr("used by the selected operator"));
  return text;
}

QGraphicsSimpleTextItem* addText(QGraphicsScene* scene, const QString& text, const QPointF& at,
                                 int pixelSize, bool bold, const QColor& colour,
                                 bool centred = false) {
  auto* item = scene->addSimpleText(text);
  QFont f(QStringLiteral("Helvetica"));
  f.setPixelSize(pixelSize);
  f.setBold(bold);
  item->setFont(f);
  item->setBrush(colour);
  item->setPos(centred ? at - QPointF(item->boundingRect().width() / 2, 0) : at);
  item->setZValue(5);
  return item;
}

}  // namespace

TopologyView::TopologyView(ExplorerDocument* document, QWidget* parent)
    : QWidget(parent),
      document_(document),
      chooser_(new QComboBox(this)),
      heatButtons_(new QButtonGroup(this)),
      rampLabel_(new QLabel(this)),
      ramp_(new QWidget(this)),
      legend_(new QLabel(this)),
      selection_(new QLabel(this)),
      scene_(new QGraphicsScene(this)),
      canvas_(new QGraphicsView(scene_, this)),
      table_(new QTableView(this)),
      model_(new OperatorTableModel(this)),
      proxy_(new QSortFilterProxyModel(this)) {
  setObjectName(QStringLiteral("topologyView"));
  chooser_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  auto* memory = new QRadioButton(tr("Memory"), this);
  auto* load = new QRadioButton(tr("Load"), this);
  memory->setToolTip(
      tr("Bytes the plan keeps on each device (weights, gradients, optimizer state, activations) "
         "against its capacity"));
  load->setToolTip(tr("Time each device computes per iteration, against the busiest device"));
  auto* stage = new QRadioButton(tr("Pipeline stage"), this);
  stage->setToolTip(tr("Which pipeline stage each device runs (pipelined plans)"));
  stage->setObjectName(QStringLiteral("stageColouring"));
  auto* experts = new QRadioButton(tr("Experts"), this);
  experts->setToolTip(
      tr("Which experts each device holds, its expert-parallel group and the links the group's "
         "all-to-all crosses (mixture-of-experts plans)"));
  experts->setObjectName(QStringLiteral("expertColouring"));
  memory->setChecked(true);
  heatButtons_->addButton(memory, int(HeatMap::Memory));
  heatButtons_->addButton(load, int(HeatMap::Load));
  heatButtons_->addButton(stage, int(HeatMap::Stage));
  heatButtons_->addButton(experts, int(HeatMap::Experts));
  rampLabel_->setPixmap(rampPixmap());
  selection_->setWordWrap(true);
  selection_->setStyleSheet(QStringLiteral("padding: 4px 6px;"));
  selection_->setObjectName(QStringLiteral("topologySelection"));
  selection_->setTextInteractionFlags(Qt::TextSelectableByMouse);

  auto* top = new QHBoxLayout;
  top->setContentsMargins(6, 4, 6, 0);
  top->addWidget(new QLabel(tr("Plan:"), this));
  top->addWidget(chooser_);
  top->addSpacing(16);
  top->addWidget(new QLabel(tr("Colour devices by:"), this));
  top->addWidget(memory);
  top->addWidget(load);
  top->addWidget(stage);
  top->addWidget(experts);
  top->addSpacing(8);
  auto* ramp = new QHBoxLayout(ramp_);
  ramp->setContentsMargins(0, 0, 0, 0);
  ramp->addWidget(new QLabel(tr("0%"), ramp_));
  ramp->addWidget(rampLabel_);
  ramp->addWidget(new QLabel(tr("100%"), ramp_));
  top->addWidget(ramp_);
  top->addStretch(1);

  canvas_->setRenderHints(QPainter::Antialiasing | QPainter::TextAntialiasing);
  canvas_->setDragMode(QGraphicsView::ScrollHandDrag);
  canvas_->setFrameShape(QFrame::NoFrame);
  canvas_->setBackgroundBrush(Qt::white);

  proxy_->setSourceModel(model_);
  proxy_->setSortRole(OperatorTableModel::SortRole);
  table_->setModel(proxy_);
  applyReadOnlyTableStyle(table_);
  // Sized once per plan from its first rows: measuring every row of a big plan would stall the GUI.
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);
  table_->horizontalHeader()->setResizeContentsPrecision(60);
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->setObjectName(QStringLiteral("operatorTable"));

  legend_->setTextFormat(Qt::RichText);
  legend_->setWordWrap(true);
  legend_->setObjectName(QStringLiteral("topologyLegend"));
  legend_->setStyleSheet(QStringLiteral("padding: 2px 6px;"));
  auto* left = new QWidget(this);
  auto* leftLayout = new QVBoxLayout(left);
  leftLayout->setContentsMargins(0, 0, 0, 0);
  leftLayout->addWidget(legend_);
  leftLayout->addWidget(canvas_, 1);
  leftLayout->addWidget(selection_);
  auto* splitter = new QSplitter(Qt::Horizontal, this);
  splitter->addWidget(left);
  splitter->addWidget(table_);
  splitter->setStretchFactor(0, 3);
  splitter->setStretchFactor(1, 2);
  splitter->setSizes({900, 380});

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addLayout(top);
  layout->addWidget(splitter, 1);

  connect(heatButtons_, &QButtonGroup::idClicked, this, [this](int id) {
    heatChosen_ = true;
    setHeatMap(HeatMap(id));
  });
  connect(chooser_, &QComboBox::currentIndexChanged, this, [this](int index) {
    if (updatingChooser_ || index < 0) return;
    userChose_ = true;
    display(chooser_->itemData(index).toString());
  });
  connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
          [this](const QModelIndex& current) {
            if (!current.isValid()) return;
            const NodeId id = proxy_->data(current, OperatorTableModel::NodeIdRole).toLongLong();
            if (id == selected_) return;
            selectOperator(id);
            if (plan_)
              document_->setSelectedName(QString::fromStdString(plan_->pcg.node(id).op.name));
          });
  connect(document_, &ExplorerDocument::machineChanged, this, [this] { rebuildChooser(); });
  connect(document_, &ExplorerDocument::modelChanged, this, [this] {
    userChose_ = false;
    rebuildChooser();
  });
  connect(document_, &ExplorerDocument::planChanged, this, &TopologyView::rebuildChooser);
  connect(document_, &ExplorerDocument::selectionChanged, this,
          &TopologyView::followDocumentSelection);
  rebuildChooser();
}

void TopologyView::showMode(const QString& mode) {
  userChose_ = true;
  display(mode);
  rebuildChooser();
}

void TopologyView::rebuildChooser() {
  updatingChooser_ = true;
  chooser_->clear();
  for (const QString& mode : document_->planModes())
    chooser_->addItem(tr("%1 — %2").arg(ExplorerDocument::modeTitle(mode),
                                        formatMs(document_->plan(mode)->summary.iteration_time_ms)),
                      mode);
  if (chooser_->count() == 0) chooser_->addItem(tr("(no plan yet)"), QString());
  QString want = shownMode_;
  if (!userChose_ || !document_->plan(want)) want = document_->bestMode();
  const int index = chooser_->findData(want);
  chooser_->setCurrentIndex(index < 0 ? 0 : index);
  updatingChooser_ = false;
  display(chooser_->currentData().toString());
}

void TopologyView::display(const QString& mode) {
  const auto plan = mode.isEmpty() ? nullptr : document_->plan(mode);
  const auto machine =
      plan ? std::make_shared<const MachineSpec>(plan->machine) : document_->machine();
  const bool machineChanged =
      !machine_ || !machine || machine_to_json(*machine) != machine_to_json(*machine_);
  shownMode_ = plan ? mode : QString();
  if (plan == plan_ && !machineChanged) return;
  plan_ = plan;
  machine_ = machine;
  model_->setPlan(plan_);
  proxy_->sort(-1);
  table_->resizeColumnsToContents();
  selected_ = -1;
  devices_.clear();
  links_.clear();
  // A pipelined plan is shown by stage unless the user chose a colouring; a plan without a
  // pipeline has no stages to show.
  const bool pipelined = plan_ && plan_->pipeline;
  const bool experts = pipelined && plan_->pipeline->experts > 0;
  heatButtons_->button(int(HeatMap::Stage))->setEnabled(pipelined);
  heatButtons_->button(int(HeatMap::Experts))->setEnabled(experts);
  // An expert-parallel plan is shown by its experts: where they live is what it is about.
  if (pipelined && !heatChosen_)
    heatMap_ = experts && plan_->pipeline->expert_parallel > 1 ? HeatMap::Experts : HeatMap::Stage;
  if (!experts && heatMap_ == HeatMap::Experts)
    heatMap_ = pipelined ? HeatMap::Stage : HeatMap::Memory;
  if (!pipelined && heatMap_ == HeatMap::Stage) heatMap_ = HeatMap::Memory;
  heatButtons_->button(int(heatMap_))->setChecked(true);
  ramp_->setVisible(heatMap_ == HeatMap::Memory || heatMap_ == HeatMap::Load);
  // A pipelined plan's operators have no placements of their own (its stages are planned
  // segment by segment): the operator list would be empty.
  const bool table = !plan_ || !plan_->mapping.per_op.empty();
  if (table != table_->isVisibleTo(this)) {
    table_->setVisible(table);
    // The canvas gets the table's room once the splitter has laid out again.
    QTimer::singleShot(0, this, [this] { fitCanvas(); });
  }
  computeHeat();
  // An expert group over several whole nodes gets rows of whole groups.
  int step = 1;
  if (pipelined && machine_ && plan_->pipeline->experts > 0 &&
      plan_->pipeline->device_order == DeviceOrder::PipelineOutermost) {
    // A group: ep sets of experts, each split over etp devices.
    const int group = plan_->pipeline->expert_parallel * plan_->pipeline->expert_tensor_parallel;
    const int perNode = machine_->devices_per_node;
    if (group > perNode && group % perNode == 0) step = group / perNode;
  }
  if (machineChanged || step != columnStep_) {
    columnStep_ = step;
    rebuildScene();
  }
  rebuildOverlays();
  legend_->setText(legendText());
  paintState();
  followDocumentSelection(document_->selectedName());
}

void TopologyView::computeHeat() {
  const int n = machine_ ? machine_->num_devices() : 0;
  memory_ = QList<double>(n, 0.0);
  busy_ = QList<double>(n, 0.0);
  heat_ = QList<double>(n, 0.0);
  stage_ = QList<int>(n, -1);
  experts_ = QList<ExpertPlacement>(n);
  if (!plan_ || !machine_) return;
  if (plan_->pipeline) {
    // Each device's pipeline rank, as the plan's grid orders them (device_order.h).
    const PipelinePlan& pp = *plan_->pipeline;
    const int planned =
        pp.tensor_parallel * pp.context_parallel * pp.data_parallel * pp.pipeline_stages;
    for (int d = 0; d < std::min(n, planned); ++d) stage_[d] = pp.grid().position(d).stage;
    for (int d = 0; d < n; ++d) experts_[d] = expert_placement(pp, d);
    // Every device of a rank keeps what its rank does.
    for (int d = 0; d < n; ++d)
      if (stage_[d] >= 0 && size_t(stage_[d]) < pp.rank_memory.size() &&
          size_t(d) >= plan_->mapping.memory_per_device.size())
        memory_[d] = pp.rank_memory[size_t(stage_[d])].total();
  }
  for (int d = 0; d < n && size_t(d) < plan_->mapping.memory_per_device.size(); ++d)
    memory_[d] = plan_->mapping.memory_per_device[size_t(d)];
  for (const OpCost& c : plan_->mapping.per_op)
    for (int d : c.view.devices())
      if (d >= 0 && d < n) busy_[d] += c.forward + c.backward;
  const double busiest = busy_.isEmpty() ? 0 : *std::max_element(busy_.begin(), busy_.end());
  for (int d = 0; d < n; ++d)
    heat_[d] = heatMap_ == HeatMap::Memory ? memory_[d] / double(machine_->device(d).memory_bytes)
                                           : (busiest > 0 ? busy_[d] / busiest : 0);
}

void TopologyView::setHeatMap(HeatMap map) {
  const bool pipelined = plan_ && plan_->pipeline;
  if (map == HeatMap::Experts && !(pipelined && plan_->pipeline->experts > 0))
    map = pipelined ? HeatMap::Stage : HeatMap::Memory;
  if (map == HeatMap::Stage && !pipelined) map = HeatMap::Memory;
  heatMap_ = map;
  ramp_->setVisible(heatMap_ == HeatMap::Memory || heatMap_ == HeatMap::Load);
  if (QAbstractButton* b = heatButtons_->button(int(map))) b->setChecked(true);
  computeHeat();
  rebuildOverlays();
  legend_->setText(legendText());
  paintState();
}

void TopologyView::rebuildOverlays() {
  for (QGraphicsItem* item : overlayItems_) {
    scene_->removeItem(item);
    delete item;
  }
  overlayItems_.clear();
  outlines_.clear();
  alltoallLinks_.clear();
  overlayBounds_ = layout_.bounds;
  if (heatMap_ != HeatMap::Experts || !plan_ || !plan_->pipeline || !machine_) {
    scene_->setSceneRect(overlayBounds_);
    fitCanvas();
    return;
  }
  const PipelinePlan& pp = *plan_->pipeline;
  const int n = int(layout_.devices.size());
  // Devices of each (stage, group), in order.
  std::map<std::pair<int, int>, QList<int>> groups;
  for (int d = 0; d < std::min(n, int(experts_.size())); ++d)
    if (experts_[d].stage >= 0) groups[{experts_[d].stage, experts_[d].group}].append(d);
  // The drawing is fitted to the room: lines and labels grow with it so that they stay legible.
  const double unit = std::max(1.0, layout_.bounds.width() / 1400);
  overlayUnit_ = unit;
  const QColor ink(0x26, 0x32, 0x38);
  for (const auto& [key, devices] : groups) {
    GroupOutline o;
    o.stage = key.first;
    o.group = key.second;
    o.label = tr("stage %1 · expert group %2").arg(key.first).arg(key.second);
    // A node wholly in the group is outlined with its neighbours in the same row of nodes; a
    // node it shares, around the group's devices there.
    std::map<int, QList<int>> byNode;
    for (int d : devices) byNode[layout_.devices[d].node].append(d);
    QRectF span;
    for (const auto& [node, members] : byNode) {
      const QRectF nodeRect = layout_.nodes[node].rect;
      if (members.size() == machine_->devices_per_node) {
        if (!span.isEmpty() && qAbs(span.top() - nodeRect.top()) < 1 &&
            nodeRect.left() - span.right() < nodeRect.width() / 4)
          span = span.united(nodeRect);
        else {
          if (!span.isEmpty()) o.rects.append(span);
          span = nodeRect;
        }
        continue;
      }
      QRectF around;
      for (int d : members)
        around =
            around.isEmpty() ? layout_.devices[d].rect : around.united(layout_.devices[d].rect);
      o.rects.append(around.adjusted(-8, -8, 8, 8));
    }
    if (!span.isEmpty()) o.rects.append(span);
    outlines_.append(o);
  }
  // Outlines only where they stay apart: a group scattered over the machine (tp-pp-dp order)
  // would be boxes over other groups' devices.
  const bool contiguous =
      std::all_of(outlines_.begin(), outlines_.end(), [&](const GroupOutline& o) {
        int inside = 0;
        for (const QRectF& r : o.rects)
          for (const TopologyDevice& d : layout_.devices)
            if (r.contains(d.rect.center())) ++inside;
        return inside == int(groups[{o.stage, o.group}].size());
      });
  if (contiguous)
    for (const GroupOutline& o : outlines_) {
      for (const QRectF& r : o.rects) {
        auto* box = scene_->addRect(r.adjusted(-3 * unit, -3 * unit, 3 * unit, 3 * unit),
                                    QPen(ink, 2.5 * unit), Qt::NoBrush);
        box->setZValue(6);
        overlayItems_.append(box);
      }
      // Left of the group's first row: the rows of the drawing read as a table of groups. A
      // group right of another node in its row is labelled on its own top line instead, where
      // the label to its left would cover that node's devices.
      const QRectF first = o.rects.front();
      QGraphicsSimpleTextItem* text = addText(scene_, o.label, QPointF(0, 0),
                                              int(std::clamp(13 * unit, 13.0, 160.0)), true, ink);
      const QRectF r = text->boundingRect();
      const bool leftmost =
          std::none_of(layout_.nodes.begin(), layout_.nodes.end(), [&](const TopologyBox& b) {
            return b.rect.right() <= first.left() && b.rect.bottom() > first.top() &&
                   b.rect.top() < first.bottom();
          });
      if (leftmost)
        text->setPos(first.left() - r.width() - 10 * unit, first.center().y() - r.height() / 2);
      else
        text->setPos(first.right() - r.width() - 10 * unit, first.top() + 4 * unit);
      text->setZValue(7);
      overlayItems_.append(text);
      overlayBounds_ = overlayBounds_.united(text->sceneBoundingRect().adjusted(-8, -8, 8, 8));
    }
  else
    outlines_.clear();
  // Rows of whole groups: under each column of nodes, the experts its nodes hold.
  if (contiguous && columnStep_ > 1 && !layout_.nodes.isEmpty()) {
    double bottom = 0;
    for (const TopologyBox& b : layout_.nodes) bottom = std::max(bottom, b.rect.bottom());
    for (int node = 0; node < std::min(columnStep_, int(layout_.nodes.size())); ++node) {
      std::int64_t first = -1, last = -1;
      for (const TopologyDevice& d : layout_.devices)
        if (d.node == node && experts_.value(d.index).last_expert >= 0) {
          const ExpertPlacement& e = experts_[d.index];
          first = first < 0 ? e.first_expert : std::min(first, e.first_expert);
          last = std::max(last, e.last_expert);
        }
      if (first < 0) continue;
      const QRectF column = layout_.nodes[node].rect;
      QGraphicsSimpleTextItem* text = addText(scene_, expertRange(first, last), QPointF(0, 0),
                                              int(std::clamp(13 * unit, 13.0, 160.0)), true, ink);
      const QRectF r = text->boundingRect();
      text->setPos(column.center().x() - r.width() / 2, bottom + 6 * unit);
      text->setZValue(7);
      overlayItems_.append(text);
      overlayBounds_ = overlayBounds_.united(text->sceneBoundingRect().adjusted(-8, -8, 8, 8));
    }
  }
  // One group's all-to-all (the first of the busiest stage): every device to every other, so
  // every port and every node uplink the group's devices have.
  const int busiest = alltoall_traffic(pp).busiest_rank;
  const auto it = groups.find({busiest, 0});
  if (pp.expert_parallel > 1 && it != groups.end() && it->second.size() > 1) {
    const QList<int>& g = it->second;
    for (int i = 1; i < g.size(); ++i)
      for (int l : layout_.route(*machine_, g[0], g[i])) alltoallLinks_.insert(l);
    for (int l : layout_.route(*machine_, g[1], g[0])) alltoallLinks_.insert(l);
  }
  scene_->setSceneRect(overlayBounds_);
  fitCanvas();
}

void TopologyView::rebuildScene() {
  overlayItems_.clear();  // the scene deletes them
  outlines_.clear();
  overlayBounds_ = QRectF();
  scene_->clear();
  deviceItems_.clear();
  deviceTexts_.clear();
  linkItems_.clear();
  if (!machine_) {
    layout_ = TopologyLayout();
    addText(scene_, tr("No machine selected"), QPointF(0, 0), 16, false, QColor(0x60, 0x7d, 0x8b));
    return;
  }
  const MachineSpec& m = *machine_;
  layout_ = layOutTopology(m, 1.4, columnStep_);
  const QColor ink(0x26, 0x32, 0x38);
  if (!layout_.networkSwitch.isEmpty()) {
    scene_
        ->addRect(layout_.networkSwitch, QPen(QColor(0x15, 0x65, 0xc0), 1.5),
                  QColor(0xe3, 0xf2, 0xfd))
        ->setZValue(3);
    addText(scene_, tr("Network switch"),
            layout_.networkSwitch.topLeft() + QPointF(layout_.networkSwitch.width() / 2, 4), 13,
            true, ink, true);
    addText(scene_, tr("%1 per node").arg(linkText(m.inter_node)),
            layout_.networkSwitch.topLeft() + QPointF(layout_.networkSwitch.width() / 2, 21), 11,
            false, ink, true);
  }
  const bool cpu = !m.device_types.empty() && m.device_types[0].kind == "cpu";
  for (const TopologyBox& b : layout_.nodes) {
    scene_->addRect(b.rect, QPen(QColor(0x78, 0x90, 0x9c), 1.5), QColor(0xfa, 0xfa, 0xfa))
        ->setZValue(0);
    addText(scene_, tr("Node %1").arg(b.index), b.rect.topLeft() + QPointF(10, 6), 13, true, ink);
  }
  for (int i = 0; i < layout_.islands.size(); ++i) {
    const TopologyBox& b = layout_.islands[i];
    scene_
        ->addRect(b.rect, QPen(QColor(0xa5, 0xd6, 0xa7), 1, Qt::DashLine), QColor(0xf1, 0xf8, 0xe9))
        ->setZValue(1);
    const QString title = b.title.isEmpty() ? linkText(m.intra_island)
                                            : tr("%1 · %2").arg(b.title, linkText(m.intra_island));
    addText(scene_, title, b.rect.topLeft() + QPointF(8, 4), 11, false, QColor(0x2e, 0x7d, 0x32));
    const QRectF sw = layout_.islandSwitches.value(i);
    if (!sw.isEmpty())
      scene_->addRect(sw, QPen(QColor(0x43, 0xa0, 0x47)), QColor(0xc8, 0xe6, 0xc9))->setZValue(2);
  }
  for (const TopologyLink& l : layout_.links) {
    auto* item = scene_->addPath(l.path, linkPen(l.kind, false));
    item->setZValue(2);
    item->setToolTip(l.kind == TopologyLink::Kind::IntraIsland   ? linkText(m.intra_island)
                     : l.kind == TopologyLink::Kind::InterIsland ? linkText(m.inter_island)
                                                                 : linkText(m.inter_node));
    linkItems_.append(item);
    if (l.kind == TopologyLink::Kind::InterIsland) {  // its name is in the legend
      addText(scene_, formatBandwidth(m.inter_island.bandwidth),
              l.path.pointAtPercent(0.5) + QPointF(0, 6), 11, false, QColor(0x4e, 0x34, 0x2e),
              true);
    }
  }
  for (const TopologyDevice& d : layout_.devices) {
    auto* rect = scene_->addRect(d.rect, QPen(QColor(0x45, 0x5a, 0x64), 1.2), Qt::white);
    rect->setZValue(4);
    rect->setToolTip(QString::fromStdString(m.device(d.index).name));
    deviceItems_.append(rect);
    addText(scene_, tr("%1 %2").arg(cpu ? tr("Rank") : tr("GPU")).arg(d.index),
            d.rect.topLeft() + QPointF(d.rect.width() / 2, 6), 13, true, ink, true);
    deviceTexts_.append(
        addText(scene_, QString(), d.rect.topLeft() + QPointF(6, 26), 10, false, ink));
  }
  legend_->setText(legendText());
  scene_->setSceneRect(layout_.bounds);
  canvas_->fitInView(layout_.bounds, Qt::KeepAspectRatio);
  if (canvas_->transform().m11() > 1.3) canvas_->setTransform(QTransform::fromScale(1.3, 1.3));
}

void TopologyView::paintState() {
  if (!machine_) return;
  for (int d = 0; d < deviceItems_.size(); ++d) {
    const bool on = devices_.count(d) != 0;
    deviceItems_[d]->setBrush(deviceColor(d));
    deviceItems_[d]->setPen(on ? QPen(QColor(0x1e, 0x88, 0xe5), 4)
                               : QPen(QColor(0x45, 0x5a, 0x64), 1.2));
    QString text;
    if (plan_ && heatMap_ == HeatMap::Experts) {
      const ExpertPlacement& e = experts_.value(d);
      // With expert tensor parallelism a device holds one slice of each of its experts.
      const int etp = plan_->pipeline->expert_tensor_parallel;
      const QString held = (etp > 1 ? tr("1/%1 of ").arg(etp) : QString()) +
                           expertRange(e.first_expert, e.last_expert);
      text = e.stage < 0 ? tr("idle")
             : e.last_expert < e.first_expert
                 ? tr("stage %1").arg(e.stage)
                 : tr("%1\nstage %2 · group %3").arg(held).arg(e.stage).arg(e.group);
    } else if (plan_ && heatMap_ == HeatMap::Stage) {
      const int stage = stage_.value(d);
      const PipelinePlan& pp = *plan_->pipeline;
      const int copy = stage < 0 ? 0 : pp.grid().position(d).copy;
      // Its layers when the stage has one range (interleaved stages: the legend lists them).
      QString layers;
      if (stage >= 0 && pp.interleave == 1)
        for (const StagePlan& c : pp.chunks)
          if (c.rank == stage)
            layers = c.first_layer == c.last_layer
                         ? tr(" · layer %1").arg(c.first_layer)
                         : tr(" · layers %1–%2").arg(c.first_layer).arg(c.last_layer);
      text = stage < 0 ? tr("idle") : tr("stage %1%2\ncopy %3").arg(stage).arg(layers).arg(copy);
    } else if (plan_) {
      const double capacity = double(machine_->device(d).memory_bytes);
      text = heatMap_ == HeatMap::Memory ? tr("%1\n%2% of %3")
                                               .arg(formatBytes(memory_.value(d)))
                                               .arg(qRound(100 * memory_.value(d) / capacity))
                                               .arg(formatBytes(capacity))
                                         : tr("busy %1\n%2% of busiest")
                                               .arg(formatMs(busy_.value(d) * 1e3))
                                               .arg(qRound(100 * heat_.value(d)));
    } else {
      text = formatBytes(double(machine_->device(d).memory_bytes));
    }
    deviceTexts_[d]->setText(text);
    const QRectF r = layout_.devices[d].rect;
    deviceTexts_[d]->setPos(r.center().x() - deviceTexts_[d]->boundingRect().width() / 2,
                            r.top() + 26);
  }
  for (int i = 0; i < linkItems_.size(); ++i) {
    const bool on = links_.count(i) != 0;
    const bool alltoall = !on && alltoallLinks_.count(i) != 0;
    QPen pen = linkPen(layout_.links[i].kind, on);
    if (alltoall) pen = QPen(kAlltoallLink, 4 * overlayUnit_, Qt::SolidLine, Qt::RoundCap);
    linkItems_[i]->setPen(pen);
    linkItems_[i]->setZValue(on || alltoall ? 3 : 2);
  }
  selection_->setText(selectionText());
}

QString TopologyView::deviceText(int device) const {
  return device >= 0 && device < deviceTexts_.size() ? deviceTexts_[device]->text() : QString();
}

QColor TopologyView::deviceColor(int device) const {
  if (heatMap_ == HeatMap::Experts) {
    const ExpertPlacement e = experts_.value(device);
    if (e.stage < 0) return QColor(0xee, 0xee, 0xee);
    return expertColor(e.ep_rank, plan_ ? plan_->pipeline->expert_parallel : 1);
  }
  if (heatMap_ == HeatMap::Stage) {
    const int stage = stage_.value(device, -1);
    return stage < 0 ? QColor(0xee, 0xee, 0xee) : stageColor(stage);
  }
  return heatColor(heat_.value(device));
}

QString TopologyView::legendText() const {
  if (!machine_) return {};
  QString text = machineLegendText(*machine_);
  if (heatMap_ == HeatMap::Experts && plan_ && plan_->pipeline) {
    const PipelinePlan& pp = *plan_->pipeline;
    const int ep = std::max(1, pp.expert_parallel);
    const std::int64_t held = pp.experts / ep;
    // The rainbow's ends and middle, each with the experts it stands for.
    QStringList chips;
    for (int r : {0, ep / 2, ep - 1}) {
      if (r > 0 && r == ep / 2 && ep < 3) continue;
      chips << tr("<span style='color:%1; font-size:large;'>&#9632;</span>&nbsp;%2")
                   .arg(expertColor(r, ep).darker(115).name(),
                        expertRange(r * held, r * held + held - 1));
    }
    const int etp = std::max(1, pp.expert_tensor_parallel);
    QString slices = etp > 1
                         ? tr(", each split over %1 devices (expert tensor parallelism)").arg(etp)
                         : QString();
    if (pp.route_groups > 1)
      slices += tr("; a token's %1 from its best %2 of %3 groups of %4")
                    .arg(pp.top_k)
                    .arg(pp.route_group_top_k)
                    .arg(pp.route_groups)
                    .arg(pp.experts / pp.route_groups);
    return tr("<b>Experts</b> (%1 in each MoE layer, %2 a device%3: expert parallelism %4, each "
              "group of %5 devices holding all of its stage's experts, %6 copies of each) &nbsp; "
              "%7 &nbsp; <span style='color:%8; font-weight:bold;'>━━</span>&nbsp;one group's "
              "all-to-all<br>%9")
        .arg(pp.experts)
        .arg(held)
        .arg(slices)
        .arg(ep)
        .arg(ep * etp)
        .arg(pp.expert_data_parallel)
        .arg(chips.join(QStringLiteral(" … ")), kAlltoallLink.name(), text);
  }
  if (heatMap_ != HeatMap::Stage || !plan_ || !plan_->pipeline) return text;
  // Each stage's colour and layers (every chunk of an interleaved schedule).
  const PipelinePlan& pp = *plan_->pipeline;
  QList<QStringList> layers(pp.pipeline_stages);
  for (const StagePlan& c : pp.chunks)
    if (c.rank >= 0 && c.rank < pp.pipeline_stages)
      layers[c.rank] << (c.first_layer == c.last_layer
                             ? QString::number(c.first_layer)
                             : QStringLiteral("%1–%2").arg(c.first_layer).arg(c.last_layer));
  QStringList stages;
  for (int s = 0; s < pp.pipeline_stages; ++s) {
    QStringList l = layers[s];
    if (l.size() > 3) l = QStringList{l[0], l[1], QStringLiteral("… (%1 chunks)").arg(l.size())};
    stages << tr("<span style='color:%1; font-size:large;'>&#9632;</span>&nbsp;stage %2: "
                 "layer%3 %4")
                  .arg(stageColor(s).darker(115).name())
                  .arg(s)
                  .arg(layers[s].size() == 1 && !layers[s][0].contains(QChar(0x2013))
                           ? QString()
                           : QStringLiteral("s"))
                  .arg(l.join(QStringLiteral(", ")));
  }
  return tr("<b>Pipeline stages</b> (%1 devices each: %2 tensor-parallel%3 × %4 data-parallel "
            "copies) &nbsp; %5<br>%6")
      .arg(pp.tensor_parallel * pp.context_parallel * pp.data_parallel)
      .arg(pp.tensor_parallel)
      .arg(pp.context_parallel > 1 ? tr(" × %1 context-parallel").arg(pp.context_parallel)
                                   : QString())
      .arg(pp.data_parallel)
      .arg(stages.join(QStringLiteral(" &nbsp; ")), text);
}

void TopologyView::selectOperator(NodeId id) {
  selected_ = -1;
  devices_.clear();
  links_.clear();
  const int row = model_->rowOf(id);
  if (plan_ && machine_ && row >= 0) {
    selected_ = id;
    const OpCost& c = plan_->mapping.per_op[size_t(row)];
    std::vector<int> devices = c.view.devices();
    devices_.insert(devices.begin(), devices.end());
    std::vector<int> group(devices_.begin(), devices_.end());
    // Weight synchronisation and collectives run as a ring over the operator's devices (the cost
    // model charges the group's slowest link): every hop of the ring.
    if (c.own.communication > 0 && group.size() > 1)
      for (size_t i = 0; i < group.size(); ++i)
        for (int l : layout_.route(*machine_, group[i], group[(i + 1) % group.size()]))
          links_.insert(l);
    // Inputs whose pieces sit on other devices travel from the producers' tasks to this one's.
    if (c.edges.communication > 0) {
      for (const TensorRef& in : plan_->pcg.node(id).inputs) {
        NodeId p = in.node;
        while (model_->rowOf(p) < 0 && !plan_->pcg.node(p).inputs.empty())
          p = plan_->pcg.node(p).inputs.front().node;
        const int prow = model_->rowOf(p);
        if (prow < 0) continue;
        const std::vector<int> from = plan_->mapping.per_op[size_t(prow)].view.devices();
        const size_t n = std::max(from.size(), devices.size());
        for (size_t i = 0; i < n && !from.empty() && !devices.empty(); ++i)
          for (int l : layout_.route(*machine_, from[i % from.size()], devices[i % devices.size()]))
            links_.insert(l);
      }
    }
    const QModelIndex source = model_->index(row, 0);
    const QModelIndex shown = proxy_->mapFromSource(source);
    if (table_->currentIndex().row() != shown.row()) {
      const QSignalBlocker block(table_->selectionModel());
      table_->selectionModel()->setCurrentIndex(
          shown, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
      table_->scrollTo(shown);
    }
  } else {
    table_->clearSelection();
  }
  paintState();
}

QString TopologyView::selectionText() const {
  if (!plan_) return tr("No plan yet: the heat map and placements appear once a plan is computed.");
  if (plan_->pipeline && selected_ < 0 && heatMap_ == HeatMap::Experts) return expertsText();
  if (plan_->pipeline && selected_ < 0) {
    const PipelinePlan& pp = *plan_->pipeline;
    // A replica: the tensor-parallel devices of one sequence shard each, side by side.
    const int replica = pp.tensor_parallel * pp.context_parallel;
    const QString group =
        pp.context_parallel > 1
            ? tr("%1 consecutive devices (%2 context-parallel shards of %3 tensor-parallel ones)")
                  .arg(replica)
                  .arg(pp.context_parallel)
                  .arg(pp.tensor_parallel)
            : tr("%1 consecutive tensor-parallel devices").arg(replica);
    if (pp.device_order == DeviceOrder::DataParallelOutermost)
      return tr("A pipelined plan, data-parallel copies outermost: copy <i>c</i> of stage "
                "<i>s</i> runs on devices %1<i>c</i> + %2<i>s</i> onwards, %3; activations go "
                "from each stage to the next over the links between them.")
          .arg(replica * pp.pipeline_stages)
          .arg(replica)
          .arg(group);
    const int perStage = replica * pp.data_parallel;
    return tr("A pipelined plan: stage <i>s</i> runs on devices %1<i>s</i> to %1<i>s</i> + %2, "
              "as %3 data-parallel copies of %4; activations go from each stage to the next over "
              "the links between them.")
        .arg(perStage)
        .arg(perStage - 1)
        .arg(pp.data_parallel)
        .arg(group);
  }
  if (selected_ < 0)
    return tr(
        "Select an operator in the list (or in the PCG view) to see the devices it runs on and the "
        "links it uses.");
  const int row = model_->rowOf(selected_);
  const OpCost& c = plan_->mapping.per_op[size_t(row)];
  QStringList kinds;
  std::set<TopologyLink::Kind> used;
  for (int l : links_) used.insert(layout_.links[l].kind);
  if (used.count(TopologyLink::Kind::IntraIsland))
    kinds << QString::fromStdString(machine_->intra_island.name);
  if (used.count(TopologyLink::Kind::InterIsland))
    kinds << QString::fromStdString(machine_->inter_island.name);
  if (used.count(TopologyLink::Kind::InterNode))
    kinds << QString::fromStdString(machine_->inter_node.name);
  const double comm = (c.own.communication + c.edges.communication) * 1e3;
  return tr("<b>%1</b> runs %2 tasks on devices %3. %4")
      .arg(QString::fromStdString(plan_->pcg.node(selected_).op.name))
      .arg(c.view.num_tasks())
      .arg(formatDevices(c.view.devices()))
      .arg(kinds.isEmpty() ? tr("It communicates with no other device.")
                           : tr("Its communication (%1 per iteration) crosses: %2.")
                                 .arg(formatMs(comm), kinds.join(QStringLiteral(", "))));
}

QString TopologyView::expertsText() const {
  const PipelinePlan& pp = *plan_->pipeline;
  const int ep = std::max(1, pp.expert_parallel);
  const int etp = std::max(1, pp.expert_tensor_parallel);
  const int group = ep * etp;  // devices of an expert-parallel group
  const int devices = machine_ ? machine_->num_devices() : 1;
  const int perNode = machine_ ? machine_->devices_per_node : 1;
  const AlltoallTraffic t = alltoall_traffic(pp);
  const int stageDevices = pp.tensor_parallel * pp.context_parallel * pp.data_parallel;
  const std::int64_t held = pp.experts / ep;
  const QString holder =
      etp > 1 ? tr("devices %1<i>i</i> to %1<i>i</i> + %2 of a group hold a 1/%1 slice of%3")
                    .arg(etp)
                    .arg(etp - 1)
                    .arg(held == 1 ? QString() : tr(" each of"))
              : tr("device <i>i</i> of a group holds");
  const QString which = held == 1
                            ? tr("expert <i>i</i>")
                            : tr("experts %1<i>i</i> to %1<i>i</i> + %2").arg(held).arg(held - 1);
  QString where =
      tr("Each stage's %1 devices form %2 expert-parallel group%3 of %4 (%5); %6 %7 of each of "
         "the stage's MoE layers, and its gradients are reduced with the %8 device%9 holding the "
         "same ones.")
          .arg(stageDevices)
          .arg(stageDevices / group)
          .arg(stageDevices / group > 1 ? QStringLiteral("s") : QString())
          .arg(group)
          .arg(group > perNode ? tr("%1 nodes").arg((group + perNode - 1) / perNode)
                               : tr("inside a node"))
          .arg(holder, which)
          .arg(pp.expert_data_parallel - 1)
          .arg(pp.expert_data_parallel > 2 ? QStringLiteral("s") : QString());
  if (ep <= 1 || t.bytes <= 0) return where;
  const QString fabric = machine_ && machine_->num_nodes > 1
                             ? QString::fromStdString(machine_->inter_node.name)
                             : tr("the fabric");
  const QString nvlink = machine_ ? QString::fromStdString(machine_->intra_island.name) : QString();
  return where +
         tr(" <b>All-to-all</b> an iteration: each device sends %1 on average, %2 over %3 to its "
            "own node and %4 over %5 to the others; the busiest stage (%6) spends %7 in it, "
            "<b>%8 exposed</b> (%9% of the %10 iteration).")
             .arg(formatBytes(t.bytes / devices), formatBytes(t.intra_node_bytes() / devices),
                  nvlink.toHtmlEscaped(), formatBytes(t.inter_node_bytes / devices),
                  fabric.toHtmlEscaped())
             .arg(t.busiest_rank)
             .arg(formatMs(t.seconds * 1e3), formatMs(t.exposed * 1e3))
             .arg(pp.iteration_time > 0 ? qRound(100 * t.exposed / pp.iteration_time) : 0)
             .arg(formatMs(pp.iteration_time * 1e3));
}

void TopologyView::followDocumentSelection(const QString& name) {
  if (!plan_) return;
  NodeId id = -1;
  const std::string n = name.toStdString();
  for (const auto& [nid, node] : plan_->pcg.nodes())
    if (node.op.name == n) id = nid;
  if (id != selected_) selectOperator(id);
}

void TopologyView::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  fitCanvas();
}

void TopologyView::fitCanvas() {
  const QRectF bounds = overlayBounds_.isEmpty() ? layout_.bounds : overlayBounds_;
  if (!bounds.isEmpty()) {
    canvas_->fitInView(bounds, Qt::KeepAspectRatio);
    if (canvas_->transform().m11() > 1.3) canvas_->setTransform(QTransform::fromScale(1.3, 1.3));
  }
}

}  // namespace unity::views
