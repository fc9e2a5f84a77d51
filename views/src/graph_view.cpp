#include "unity/views/graph_view.h"

#include <QAction>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMessageBox>
#include <QPainter>
#include <QSvgGenerator>
#include <QTimer>
#include <QToolBar>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>

#include "pcg_items.h"
#include "unity/views/graph_canvas.h"
#include "unity/views/layout_service.h"
#include "unity/views/minimap.h"

namespace unity::views {

namespace {
constexpr int kShowSourcesUpTo = 60;  // nodes: weights stay visible in graphs this small
constexpr int kCollapseAbove = 90;    // operators: more than this start with blocks collapsed
constexpr int kMaxImageSide = 32000;  // QImage and most viewers stop around 32k pixels
constexpr double kMaxImagePixels = 400e6;
constexpr int kMinimapWidth = 170;
constexpr int kMinimapHeight = 210;
constexpr int kItemsPerStep = 150;  // scene items created per event-loop turn
}  // namespace

GraphView::GraphView(QWidget* parent, LayoutService* service)
    : QWidget(parent),
      service_(service ? service : LayoutService::shared()),
      fonts_(DisplayFonts::standard()),
      toolBar_(new QToolBar(this)),
      findEdit_(new QLineEdit(this)),
      findCount_(new QLabel(this)),
      canvas_(new GraphCanvas(this)),
      scene_(new PcgScene(this)),
      placeholder_(new QLabel(canvas_)),
      status_(new QLabel(this)) {
  canvas_->setScene(scene_);
  minimap_ = new Minimap(canvas_, canvas_);
  minimap_->resize(kMinimapWidth, kMinimapHeight);

  toolBar_->setIconSize(QSize(16, 16));
  toolBar_->setToolButtonStyle(Qt::ToolButtonTextOnly);
  QAction* fit = toolBar_->addAction(tr("Fit"), canvas_, &GraphCanvas::fitAll);
  fit->setToolTip(tr("Show the whole graph (F)"));
  toolBar_->addAction(tr("−"), this, [this] { canvas_->zoomBy(0.8); })
      ->setToolTip(tr("Zoom out (−, Ctrl+wheel)"));
  toolBar_->addAction(tr("+"), this, [this] { canvas_->zoomBy(1.25); })
      ->setToolTip(tr("Zoom in (+, Ctrl+wheel)"));
  toolBar_->addAction(tr("100%"), this, [this] { canvas_->setZoom(1.0); })
      ->setToolTip(tr("Actual size (0)"));
  toolBar_->addSeparator();
  sourcesAction_ = toolBar_->addAction(tr("Weights"));
  sourcesAction_->setCheckable(true);
  sourcesAction_->setToolTip(tr("Show weights and the parallel operators applied to them"));
  connect(sourcesAction_, &QAction::toggled, this, &GraphView::setShowSources);
  auto* blocksButton = new QToolButton(toolBar_);
  blocksButton->setText(tr("Blocks"));
  blocksButton->setToolTip(
      tr("Repeated blocks: double-click a block to expand it, click a cluster's header to collapse "
         "it"));
  blocksButton->setPopupMode(QToolButton::InstantPopup);
  auto* blocksMenu = new QMenu(blocksButton);
  blocksMenu->addAction(tr("Collapse All"), this, &GraphView::collapseAllBlocks);
  blocksMenu->addAction(tr("Expand All"), this, &GraphView::expandAllBlocks);
  blocksButton->setMenu(blocksMenu);
  toolBar_->addWidget(blocksButton);
  toolBar_->addSeparator();
  findEdit_->setPlaceholderText(tr("Find operator…"));
  findEdit_->setClearButtonEnabled(true);
  findEdit_->setMaximumWidth(200);
  findEdit_->setObjectName(QStringLiteral("findEdit"));
  connect(findEdit_, &QLineEdit::returnPressed, this, [this] { find(findEdit_->text()); });
  connect(findEdit_, &QLineEdit::textChanged, this, [this](const QString& t) {
    if (t.isEmpty()) {
      found_.clear();
      scene_->setFoundKeys({});
      findCount_->clear();
    }
  });
  toolBar_->addWidget(findEdit_);
  toolBar_->addWidget(findCount_);
  toolBar_->addSeparator();
  toolBar_->addAction(tr("Export…"), this, &GraphView::exportWithDialog)
      ->setToolTip(tr("Save the whole graph as PNG (full resolution) or SVG"));

  placeholder_->setAlignment(Qt::AlignCenter);
  placeholder_->setStyleSheet(QStringLiteral("color: #607d8b; font-size: 14px;"));
  placeholder_->setText(tr("No graph"));
  status_->setObjectName(QStringLiteral("graphStatus"));
  status_->setStyleSheet(QStringLiteral("color: #546e7a; padding: 1px 4px;"));

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(0);
  layout->addWidget(toolBar_);
  layout->addWidget(canvas_, 1);
  layout->addWidget(status_);

  connect(service_, &LayoutService::layoutReady, this, &GraphView::onLayoutReady);
  connect(service_, &LayoutService::layoutFailed, this, &GraphView::onLayoutFailed);
  connectScene(scene_);
  placeOverlays();
}

void GraphView::connectScene(PcgScene* scene) {
  connect(scene, &PcgScene::nodeClicked, this, &GraphView::onNodeClicked);
  connect(scene, &PcgScene::nodeDoubleClicked, this, &GraphView::onNodeDoubleClicked);
  connect(scene, &PcgScene::clusterHeaderClicked, this,
          [this](int block) { setBlockCollapsed(blocks_.blocks.value(block).name, true); });
  connect(scene, &PcgScene::backgroundClicked, this, [this] { selectNode(-1); });
}

void GraphView::abandonBuild() {
  if (!building_) return;
  building_->deleteLater();
  building_ = nullptr;
}

GraphView::~GraphView() {
  if (ticket_) service_->cancel(this);
}

bool GraphView::layoutPending() const { return ticket_ != 0 || building_ != nullptr; }

void GraphView::setGraph(std::shared_ptr<const Graph> graph) {
  graph_ = std::move(graph);
  selectedNode_ = -1;
  selectedBlock_ = -1;
  marks_.clear();
  found_.clear();
  firstLayout_ = true;
  anchorBefore_.clear();
  if (!graph_) {
    clear();
    return;
  }
  blocks_ = groupBlocks(*graph_);
  options_ = DisplayOptions();
  options_.showSources = int(graph_->size()) <= kShowSourcesUpTo;
  const QHash<NodeId, bool> sourceSide = sourceSideNodes(*graph_);
  int operators = 0;
  for (auto it = sourceSide.begin(); it != sourceSide.end(); ++it) operators += it.value() ? 0 : 1;
  if (operators > kCollapseAbove)
    for (const Block& b : blocks_.blocks) options_.collapsed.insert(b.name);
  {
    const QSignalBlocker block(sourcesAction_);
    sourcesAction_->setChecked(options_.showSources);
  }
  abandonBuild();
  scene_->clearContent();
  shown_ = DisplayGraph();
  layout_.reset();
  relayout();
}

void GraphView::clear() {
  if (ticket_) service_->cancel(this);
  const bool wasBusy = layoutPending();
  abandonBuild();
  ticket_ = 0;
  graph_.reset();
  blocks_ = BlockGrouping();
  requested_ = shown_ = DisplayGraph();
  layout_.reset();
  scene_->clearContent();
  minimap_->refreshNow();
  selectedNode_ = -1;
  selectedBlock_ = -1;
  placeholder_->setText(tr("No graph"));
  placeholder_->show();
  status_->clear();
  if (wasBusy) emit busyChanged(false);
}

QString GraphView::statusText() const { return status_->text(); }

void GraphView::relayout() {
  if (!graph_) return;
  const bool wasBusy = layoutPending();
  abandonBuild();
  requested_ = buildDisplayGraph(*graph_, blocks_, options_, fonts_);
  ticket_ = service_->request(this, displayToDot(requested_, blocks_, fonts_),
                              int(requested_.nodes.size()));
  if (scene_->nodeItemCount() == 0) {
    placeholder_->setText(tr("Laying out %1 nodes…").arg(requested_.nodes.size()));
    placeholder_->show();
  }
  status_->setText(tr("Laying out %1 nodes and %2 edges…")
                       .arg(requested_.nodes.size())
                       .arg(requested_.edges.size()));
  if (!wasBusy) emit busyChanged(true);
}

void GraphView::onLayoutReady(quint64 ticket, GraphLayoutPtr layout) {
  if (ticket != ticket_) return;  // an older request, or another view's
  ticket_ = 0;
  // The new drawing is built in steps off screen; the old one stays until it is complete.
  abandonBuild();
  building_ = new PcgScene(this);
  building_->setBackgroundBrush(scene_->backgroundBrush());
  building_->beginContent(requested_, layout, blocks_, fonts_);
  buildingDisplay_ = requested_;
  buildingLayout_ = layout;
  continueBuild();
}

void GraphView::continueBuild() {
  if (!building_) return;
  if (!building_->buildStep(kItemsPerStep)) {
    QTimer::singleShot(0, this, &GraphView::continueBuild);
    return;
  }
  finishBuild();
}

void GraphView::finishBuild() {
  // Keep the anchor (the block just toggled, or the selection) where the user was looking.
  PcgNodeItem* before =
      firstLayout_ || anchorBefore_.isEmpty() ? nullptr : scene_->nodeItem(anchorBefore_);
  const QPointF anchorOnScreen =
      before ? canvas_->mapFromScene(before->rect().center()) : QPointF();
  const QTransform zoom = canvas_->transform();
  PcgScene* old = scene_;
  scene_ = building_;
  building_ = nullptr;
  connectScene(scene_);
  shown_ = std::move(buildingDisplay_);
  layout_ = std::move(buildingLayout_);
  canvas_->setScene(scene_);
  canvas_->setTransform(zoom);
  old->disconnect(this);
  old->deleteLater();
  QHash<QString, NodeMark> keyed;
  for (auto it = marks_.begin(); it != marks_.end(); ++it) {
    const QString key = keyOf(it.key());
    if (!key.isEmpty() && keyed.value(key) != NodeMark::OnlyHere) keyed.insert(key, it.value());
  }
  scene_->setMarks(keyed);
  applySelectionToScene();
  applyFoundToScene();
  placeholder_->hide();
  if (firstLayout_) {
    canvas_->showStart();
    firstLayout_ = false;
  } else if (PcgNodeItem* after = before ? scene_->nodeItem(anchorAfter_) : nullptr) {
    // Scroll so that the anchor's new position lands on its old place on screen.
    const QPointF offset = canvas_->mapToScene(canvas_->viewport()->rect().center()) -
                           canvas_->mapToScene(anchorOnScreen.toPoint());
    canvas_->centerOnScene(after->rect().center() + offset);
  }
  anchorBefore_.clear();
  anchorAfter_.clear();
  if (centerAfterLayout_ >= 0) {
    centerOnNode(centerAfterLayout_);
    centerAfterLayout_ = -1;
  }
  QTimer::singleShot(0, minimap_,
                     &Minimap::refreshNow);  // its own event: a big thumbnail costs a frame
  const int hidden = int(graph_->size()) - int(shown_.keyOf.size());
  const GraphLayoutPtr& layout = layout_;
  status_->setText(tr("%1 nodes, %2 edges shown%3 · laid out in %4 s%5")
                       .arg(shown_.nodes.size())
                       .arg(shown_.edges.size())
                       .arg(hidden > 0 ? tr(" (%1 weights hidden)").arg(hidden) : QString())
                       .arg(layout->seconds, 0, 'f', 2)
                       .arg(layout->ranInProcess ? QString() : tr(" by dot")));
  emit layoutFinished();
  emit busyChanged(false);
}

void GraphView::onLayoutFailed(quint64 ticket, const QString& message) {
  if (ticket != ticket_) return;
  ticket_ = 0;
  status_->setText(tr("Layout failed: %1").arg(message));
  if (scene_->nodeItemCount() == 0) placeholder_->setText(tr("Layout failed:\n%1").arg(message));
  emit layoutFailed(message);
  emit busyChanged(false);
}

void GraphView::setShowSources(bool show) {
  if (options_.showSources == show) return;
  options_.showSources = show;
  {
    const QSignalBlocker block(sourcesAction_);
    sourcesAction_->setChecked(show);
  }
  anchorBefore_ = anchorAfter_ = scene_->selectedKey();
  relayout();
}

void GraphView::setBlockCollapsed(const QString& block, bool collapsed) {
  const int index = blocks_.indexOf(block);
  if (index < 0 || options_.collapsed.contains(block) == collapsed) return;
  // Keep what the user clicked where it is: the cluster becomes the block node, or the reverse.
  const QString blockKey = QStringLiteral("b%1").arg(index);
  QString memberKey;
  for (NodeId m : blocks_.blocks[index].members)
    if (requested_.keyOf.contains(m) || shown_.keyOf.contains(m)) {
      memberKey = QStringLiteral("n%1").arg(m);
      if (!is_source_op(graph_->node(m).op.type)) break;
    }
  if (collapsed)
    options_.collapsed.insert(block);
  else
    options_.collapsed.remove(block);
  anchorBefore_ = collapsed ? memberKey : blockKey;
  anchorAfter_ = collapsed ? blockKey : memberKey;
  relayout();
}

void GraphView::collapseAllBlocks() {
  for (const Block& b : blocks_.blocks) options_.collapsed.insert(b.name);
  anchorBefore_.clear();
  relayout();
}

void GraphView::expandAllBlocks() {
  options_.collapsed.clear();
  anchorBefore_.clear();
  relayout();
}

QString GraphView::keyOf(NodeId id) const {
  const DisplayGraph& d = layoutPending() ? requested_ : shown_;
  return d.keyOf.value(id);
}

NodeId GraphView::nodeByName(const QString& name) const {
  if (!graph_) return -1;
  const std::string n = name.toStdString();
  for (const auto& [id, node] : graph_->nodes())
    if (node.op.name == n) return id;
  return -1;
}

void GraphView::selectNode(NodeId id) {
  if (!graph_ || !graph_->contains(id)) id = -1;
  if (id >= 0) {
    const int block = blocks_.blockOf.value(id, -1);
    if (block >= 0 && options_.collapsed.contains(blocks_.blocks[block].name)) {
      options_.collapsed.remove(blocks_.blocks[block].name);
      anchorBefore_.clear();
      relayout();
      centerAfterLayout_ = id;
    }
    if (!requested_.keyOf.contains(id) && !options_.showSources) {
      options_.showSources = true;
      const QSignalBlocker blocker(sourcesAction_);
      sourcesAction_->setChecked(true);
      relayout();
      centerAfterLayout_ = id;
    }
  }
  const bool changed = selectedNode_ != id || selectedBlock_ != -1;
  selectedNode_ = id;
  selectedBlock_ = -1;
  applySelectionToScene();
  if (changed) emit selectionChanged();
}

void GraphView::applySelectionToScene() {
  if (selectedBlock_ >= 0)
    scene_->setSelectedKey(QStringLiteral("b%1").arg(selectedBlock_));
  else
    scene_->setSelectedKey(selectedNode_ >= 0 ? shown_.keyOf.value(selectedNode_) : QString());
}

void GraphView::applyFoundToScene() {
  QSet<QString> keys;
  for (NodeId id : found_)
    if (shown_.keyOf.contains(id)) keys.insert(shown_.keyOf.value(id));
  scene_->setFoundKeys(keys);
}

void GraphView::centerOnNode(NodeId id) {
  if (layoutPending()) {
    centerAfterLayout_ = id;
    return;
  }
  if (PcgNodeItem* item = scene_->nodeItem(shown_.keyOf.value(id)))
    canvas_->centerOnScene(item->sceneBoundingRect().center());
}

void GraphView::onNodeClicked(const QString& key) {
  const DisplayNode* n = shown_.find(key);
  if (!n) return;
  if (n->kind == DisplayNode::Kind::Block) {
    const bool changed = selectedBlock_ != n->block;
    selectedBlock_ = n->block;
    selectedNode_ = -1;
    applySelectionToScene();
    if (changed) emit selectionChanged();
    return;
  }
  selectNode(n->node);
}

void GraphView::onNodeDoubleClicked(const QString& key) {
  const DisplayNode* n = shown_.find(key);
  if (n && n->kind == DisplayNode::Kind::Block) setBlockCollapsed(n->name, false);
}

void GraphView::highlightNodes(const QList<NodeId>& nodes, const QColor& color, int fadeMs) {
  QSet<QString> keys;
  for (NodeId id : nodes) {
    const QString key = shown_.keyOf.value(id);
    if (!key.isEmpty()) keys.insert(key);
  }
  scene_->highlight(keys, color, fadeMs);
}

void GraphView::clearHighlights() { scene_->clearHighlights(); }

void GraphView::setNodeMarks(const QHash<NodeId, NodeMark>& marks) {
  marks_ = marks;
  QHash<QString, NodeMark> keyed;
  for (auto it = marks.begin(); it != marks.end(); ++it) {
    const QString key = shown_.keyOf.value(it.key());
    if (!key.isEmpty() && keyed.value(key) != NodeMark::OnlyHere) keyed.insert(key, it.value());
  }
  scene_->setMarks(keyed);
  minimap_->refreshSoon();
}

int GraphView::find(const QString& text) {
  if (!graph_ || text.trimmed().isEmpty()) {
    found_.clear();
    scene_->setFoundKeys({});
    findCount_->clear();
    return 0;
  }
  // Exact names first, then operators, then weights and inputs (which may be hidden), each in
  // topological order.
  const QString needle = text.trimmed();
  const QHash<NodeId, bool> sourceSide = sourceSideNodes(*graph_);
  QList<NodeId> exact, operators, sources;
  for (NodeId id : graph_->topological_order()) {
    const QString name = QString::fromStdString(graph_->node(id).op.name);
    if (!name.contains(needle, Qt::CaseInsensitive)) continue;
    if (name.compare(needle, Qt::CaseInsensitive) == 0)
      exact.append(id);
    else if (sourceSide.value(id))
      sources.append(id);
    else
      operators.append(id);
  }
  const QList<NodeId> matches = exact + operators + sources;
  findIndex_ = text == findText_ ? findIndex_ + 1 : 0;
  findText_ = text;
  found_ = matches;
  applyFoundToScene();
  if (matches.isEmpty()) {
    findCount_->setText(tr(" no match "));
    return 0;
  }
  findIndex_ %= int(matches.size());
  findCount_->setText(tr(" %1 of %2 ").arg(findIndex_ + 1).arg(matches.size()));
  const NodeId target = matches[findIndex_];
  selectNode(target);
  centerOnNode(target);
  return int(matches.size());
}

QImage GraphView::renderImage(double scale) const {
  const QRectF r = scene_->sceneRect();
  if (r.isEmpty()) return {};
  scale = std::min({scale, kMaxImageSide / r.width(), kMaxImageSide / r.height(),
                    std::sqrt(kMaxImagePixels / (r.width() * r.height()))});
  QImage image(QSizeF(r.size() * scale).toSize().expandedTo(QSize(1, 1)),
               QImage::Format_ARGB32_Premultiplied);
  image.fill(Qt::white);
  QPainter painter(&image);
  painter.setRenderHints(QPainter::Antialiasing | QPainter::TextAntialiasing);
  scene_->render(&painter, QRectF(QPointF(0, 0), QSizeF(image.size())), r);
  return image;
}

bool GraphView::exportTo(const QString& path, QString* error) const {
  if (scene_->nodeItemCount() == 0) {
    *error = tr("there is no graph to export");
    return false;
  }
  if (QFileInfo(path).suffix().compare(QLatin1String("svg"), Qt::CaseInsensitive) == 0) {
    const QRectF r = scene_->sceneRect();
    QSvgGenerator svg;
    svg.setFileName(path);
    svg.setSize(r.size().toSize());
    svg.setViewBox(QRectF(QPointF(0, 0), r.size()));
    svg.setTitle(graph_ ? QString::fromStdString(graph_->name) : QString());
    svg.setDescription(tr("Parallel computation graph exported by Unity Explorer"));
    QPainter painter;
    if (!painter.begin(&svg)) {
      *error = tr("cannot write '%1'").arg(path);
      return false;
    }
    scene_->render(&painter, QRectF(QPointF(0, 0), r.size()), r);
    painter.end();
    return true;
  }
  const QImage image = renderImage(2.0);
  if (image.isNull() || !image.save(path, "PNG")) {
    *error = tr("cannot write '%1'").arg(path);
    return false;
  }
  return true;
}

void GraphView::focusFind() {
  findEdit_->setFocus(Qt::ShortcutFocusReason);
  findEdit_->selectAll();
}

void GraphView::exportWithDialog() {
  if (!graph_) return;
  const QString suggested =
      QString::fromStdString(graph_->name.empty() ? "pcg" : graph_->name) + QStringLiteral(".png");
  const QString path = QFileDialog::getSaveFileName(this, tr("Export Graph"), suggested,
                                                    tr("PNG image (*.png);;SVG drawing (*.svg)"));
  if (path.isEmpty()) return;
  QString error;
  if (!exportTo(path, &error)) QMessageBox::warning(this, tr("Export failed"), error);
}

void GraphView::placeOverlays() {
  const QRect area = canvas_->viewport()->geometry();
  // A corner of the canvas, never more than a fifth of its width or a third of its height.
  const QSize size(std::min(kMinimapWidth, area.width() / 5),
                   std::min(kMinimapHeight, area.height() / 3));
  if (size != minimap_->size()) {
    minimap_->resize(size.expandedTo(QSize(40, 40)));
    minimap_->refreshSoon();
  }
  minimap_->move(area.right() - minimap_->width() - 12, area.bottom() - minimap_->height() - 12);
  placeholder_->setGeometry(area);
}

void GraphView::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  placeOverlays();
  minimap_->refreshSoon();
}

}  // namespace unity::views
