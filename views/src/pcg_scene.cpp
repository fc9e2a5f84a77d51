#include "unity/views/pcg_scene.h"

#include <QGraphicsSceneMouseEvent>

#include <limits>

#include "pcg_items.h"

namespace unity::views {

namespace {
constexpr int kFrameMs = 50;  // overlay animation: 20 frames a second are smooth enough for a fade
constexpr double kSceneMargin = 24;
}  // namespace

PcgScene::PcgScene(QObject* parent) : QGraphicsScene(parent), fonts_(DisplayFonts::standard()) {
  // Items never move: a linear scan finds the visible ones fast enough and skips building a BSP
  // index for a thousand items in one go on the GUI thread.
  setItemIndexMethod(QGraphicsScene::NoIndex);
  clock_.start();
  fadeTimer_.setInterval(kFrameMs);
  connect(&fadeTimer_, &QTimer::timeout, this, &PcgScene::tick);
  setBackgroundBrush(Qt::white);
}

void PcgScene::clearContent() {
  build_.reset();
  fadeTimer_.stop();
  clear();
  nodes_.clear();
  edges_.clear();
  clusters_.clear();
  edgesOf_.clear();
  highlights_.clear();
  marks_.clear();
  found_.clear();
  selected_.clear();
  setSceneRect(QRectF());
}

void PcgScene::setContent(const DisplayGraph& display, GraphLayoutPtr layout,
                          const BlockGrouping& blocks, const DisplayFonts& fonts) {
  beginContent(display, std::move(layout), blocks, fonts);
  while (!buildStep(std::numeric_limits<int>::max())) {
  }
}

void PcgScene::beginContent(const DisplayGraph& display, GraphLayoutPtr layout,
                            const BlockGrouping& blocks, const DisplayFonts& fonts) {
  clearContent();
  fonts_ = fonts;
  build_ = std::make_unique<Build>(Build{display, std::move(layout), blocks, {}, {}, 0, 0, 0});
  for (const LayoutNode& n : build_->layout->nodes) build_->placed.insert(n.name, &n);
  for (const LayoutEdge& e : build_->layout->edges) build_->edgeLayout.insert(e.id, &e);
  setSceneRect(
      build_->layout->bounds.adjusted(-kSceneMargin, -kSceneMargin, kSceneMargin, kSceneMargin));
}

bool PcgScene::buildStep(int maxItems) {
  if (!build_) return true;
  Build& b = *build_;
  int made = 0;
  const auto& clusters = b.layout->clusters;
  for (; b.nextCluster < clusters.size() && made < maxItems; ++b.nextCluster, ++made) {
    const LayoutCluster& c = clusters[b.nextCluster];
    bool ok = false;
    const int block = c.name.mid(1).toInt(&ok);
    if (!ok || block < 0 || block >= b.blocks.blocks.size()) continue;
    QFont f = fonts_.subtitle;
    f.setBold(true);
    auto* item = new PcgClusterItem(block, b.blocks.blocks[block].name, c.rect, f);
    addItem(item);
    clusters_.append(item);
  }
  for (; b.nextNode < b.display.nodes.size() && made < maxItems; ++b.nextNode, ++made) {
    const DisplayNode& n = b.display.nodes[b.nextNode];
    const LayoutNode* at = b.placed.value(n.key);
    if (!at) continue;
    auto* item = new PcgNodeItem(n, at->rect(), fonts_);
    addItem(item);
    nodes_.insert(n.key, item);
  }
  for (; b.nextEdge < b.display.edges.size() && made < maxItems; ++b.nextEdge, ++made) {
    const DisplayEdge& e = b.display.edges[b.nextEdge];
    const LayoutEdge* at = b.edgeLayout.value(e.key);
    if (!at) continue;
    auto* item = new PcgEdgeItem(e, *at, fonts_.edgeLabel);
    addItem(item);
    edges_.append(item);
    edgesOf_[e.tail].append(item);
    edgesOf_[e.head].append(item);
  }
  const bool done = b.nextCluster >= clusters.size() && b.nextNode >= b.display.nodes.size() &&
                    b.nextEdge >= b.display.edges.size();
  if (done) build_.reset();
  return done;
}

QRectF PcgScene::nodeRect(const QString& key) const {
  const PcgNodeItem* item = nodes_.value(key);
  return item ? item->rect() : QRectF();
}

void PcgScene::setSelectedKey(const QString& key) {
  if (key == selected_) return;
  for (PcgEdgeItem* e : edgesOf_.value(selected_)) e->setEmphasised(false);
  if (PcgNodeItem* old = nodes_.value(selected_)) old->update();
  selected_ = nodes_.contains(key) ? key : QString();
  for (PcgEdgeItem* e : edgesOf_.value(selected_)) e->setEmphasised(true);
  if (PcgNodeItem* now = nodes_.value(selected_)) now->update();
}

void PcgScene::highlight(const QSet<QString>& keys, const QColor& color, int fadeMs) {
  const qint64 now = clock_.elapsed();
  for (const QString& key : keys) {
    PcgNodeItem* item = nodes_.value(key);
    if (!item) continue;
    highlights_.insert(key, Highlight{color, now, fadeMs});
    item->update();
  }
  if (fadeMs > 0 && !fadeTimer_.isActive()) fadeTimer_.start();
}

void PcgScene::clearHighlights() {
  const auto keys = highlights_.keys();
  highlights_.clear();
  for (const QString& key : keys)
    if (PcgNodeItem* item = nodes_.value(key)) item->update();
  fadeTimer_.stop();
}

QSet<QString> PcgScene::highlightedKeys() const {
  QSet<QString> keys;
  for (auto it = highlights_.begin(); it != highlights_.end(); ++it) keys.insert(it.key());
  return keys;
}

double PcgScene::highlightStrength(const QString& key, QColor* color) const {
  const auto it = highlights_.find(key);
  if (it == highlights_.end()) return 0;
  *color = it->color;
  if (it->fadeMs <= 0) return 1;
  const double age = double(clock_.elapsed() - it->startMs) / it->fadeMs;
  return age >= 1 ? 0 : 1 - age;
}

void PcgScene::tick() {
  const qint64 now = clock_.elapsed();
  bool fading = false;
  for (auto it = highlights_.begin(); it != highlights_.end();) {
    PcgNodeItem* item = nodes_.value(it.key());
    if (item) item->update();
    if (it->fadeMs > 0 && now - it->startMs >= it->fadeMs) {
      it = highlights_.erase(it);
      continue;
    }
    fading = fading || it->fadeMs > 0;
    ++it;
  }
  if (!fading) fadeTimer_.stop();
}

void PcgScene::setMarks(const QHash<QString, NodeMark>& marks) {
  marks_ = marks;
  for (PcgNodeItem* item : nodes_) item->update();
}

void PcgScene::setFoundKeys(const QSet<QString>& keys) {
  const QSet<QString> old = found_;
  found_ = keys;
  for (const QString& k : old | keys)
    if (PcgNodeItem* item = nodes_.value(k)) item->update();
}

void PcgScene::mousePressEvent(QGraphicsSceneMouseEvent* event) {
  QGraphicsScene::mousePressEvent(event);
  if (!event->isAccepted() && event->button() == Qt::LeftButton) emit backgroundClicked();
}

}  // namespace unity::views
