#include "pcg_items.h"

#include <QFontMetricsF>
#include <QGraphicsSceneMouseEvent>
#include <QPainter>
#include <QStyleOptionGraphicsItem>

#include "category_colors.h"
#include "unity/views/pcg_scene.h"

namespace unity::views {

namespace {
constexpr double kRadius = 5;
constexpr double kHaloWidth = 7;
constexpr double kTextLod = 0.35;  // below this zoom, text would be unreadable: boxes only

QColor darker(const QColor& c, int factor = 150) { return c.darker(factor); }
}  // namespace

// --- nodes ---------------------------------------------------------------------------------------

PcgNodeItem::PcgNodeItem(const DisplayNode& node, const QRectF& rect, const DisplayFonts& fonts)
    : node_(node),
      rect_(rect),
      title_(node.title),
      subtitle_(node.subtitle),
      badge_(QStringLiteral("×%1").arg(node.tasks)),
      titleFont_(fonts.title),
      subtitleFont_(fonts.subtitle),
      badgeFont_(fonts.subtitle) {
  badgeFont_.setBold(true);
  badgeFont_.setPixelSize(10);
  for (QStaticText* t : {&title_, &subtitle_, &badge_}) {
    t->setTextFormat(Qt::PlainText);
    t->setPerformanceHint(QStaticText::AggressiveCaching);
  }
  title_.prepare(QTransform(), titleFont_);
  subtitle_.prepare(QTransform(), subtitleFont_);
  badge_.prepare(QTransform(), badgeFont_);
  setAcceptedMouseButtons(Qt::LeftButton);
  setAcceptHoverEvents(false);
  setToolTip(node.kind == DisplayNode::Kind::Block
                 ? QObject::tr("%1\n%2\nDouble-click to expand").arg(node.name, node.subtitle)
                 : QStringLiteral("%1\n%2").arg(node.name, node.subtitle));
  setZValue(2);
}

PcgScene* PcgNodeItem::pcgScene() const { return static_cast<PcgScene*>(scene()); }

QRectF PcgNodeItem::boundingRect() const {
  return rect_.adjusted(-kHaloWidth - 2, -kHaloWidth - 2, kHaloWidth + 2, kHaloWidth + 2);
}

QPainterPath PcgNodeItem::shape() const {
  QPainterPath p;
  p.addRoundedRect(rect_, kRadius, kRadius);
  return p;
}

void PcgNodeItem::paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget*) {
  const PcgScene* s = pcgScene();
  const double lod = option->levelOfDetailFromTransform(painter->worldTransform());
  painter->setRenderHint(QPainter::Antialiasing, true);

  QColor haloColor;
  const double halo = s ? s->highlightStrength(node_.key, &haloColor) : 0;
  if (halo > 0) {
    haloColor.setAlphaF(0.25 + 0.6 * halo);
    painter->setPen(Qt::NoPen);
    painter->setBrush(haloColor);
    painter->drawRoundedRect(rect_.adjusted(-kHaloWidth, -kHaloWidth, kHaloWidth, kHaloWidth),
                             kRadius + kHaloWidth, kRadius + kHaloWidth);
  }
  if (s && s->isFound(node_.key)) {
    painter->setPen(Qt::NoPen);
    painter->setBrush(QColor(0xff, 0xeb, 0x3b));
    painter->drawRoundedRect(rect_.adjusted(-4, -4, 4, 4), kRadius + 4, kRadius + 4);
  }

  const QColor fill = categoryFill(node_.category);
  const QColor border = darker(categoryColor(node_.category), 125);
  QRectF body = rect_;
  if (node_.kind == DisplayNode::Kind::Block) {
    // Stacked cards: this node stands for several operators.
    body = rect_.adjusted(0, 0, -8, -6);
    painter->setPen(QPen(border, 1));
    painter->setBrush(fill.darker(110));
    painter->drawRoundedRect(body.translated(8, 6), kRadius, kRadius);
    painter->drawRoundedRect(body.translated(4, 3), kRadius, kRadius);
  }
  const NodeMark mark = s ? s->mark(node_.key) : NodeMark::None;
  const bool selected = s && s->selectedKey() == node_.key;
  QPen pen(border, 1.2);
  if (mark == NodeMark::Changed) pen = QPen(changedColor(), 3, Qt::DashLine);
  if (mark == NodeMark::OnlyHere) pen = QPen(onlyHereColor(), 3);
  if (selected) pen = QPen(selectionColor(), 3.5);
  painter->setPen(pen);
  painter->setBrush(fill);
  painter->drawRoundedRect(body, kRadius, kRadius);

  if (lod < kTextLod) return;
  const QFontMetricsF tm(titleFont_);
  painter->setPen(Qt::black);
  painter->setFont(titleFont_);
  const QPointF titleAt(body.left() + kNodePaddingX, body.top() + kNodePaddingY);
  painter->drawStaticText(titleAt, title_);
  painter->setFont(subtitleFont_);
  painter->setPen(QColor(0x37, 0x47, 0x4f));
  painter->drawStaticText(titleAt + QPointF(0, tm.height() + 2), subtitle_);

  if (node_.tasks > 1) {
    // ×N: the operator runs as N tasks (its output is split or replicated N ways).
    const double w = badge_.size().width() + 8;
    const QRectF r(body.right() - w - 4, body.top() + 4, w, 15);
    painter->setPen(Qt::NoPen);
    painter->setBrush(QColor(0x45, 0x5a, 0x64));
    painter->drawRoundedRect(r, 7, 7);
    painter->setPen(Qt::white);
    painter->setFont(badgeFont_);
    painter->drawStaticText(QPointF(r.left() + 4, r.center().y() - badge_.size().height() / 2),
                            badge_);
  }
  if (mark != NodeMark::None) {
    const QString tag =
        mark == NodeMark::Changed ? QObject::tr("changed") : QObject::tr("only here");
    QFont f = subtitleFont_;
    f.setPixelSize(9);
    f.setBold(true);
    const double w = QFontMetricsF(f).horizontalAdvance(tag) + 8;
    const QRectF r(body.left() + 6, body.top() - 8, w, 13);
    painter->setPen(Qt::NoPen);
    painter->setBrush(mark == NodeMark::Changed ? changedColor() : onlyHereColor());
    painter->drawRoundedRect(r, 6, 6);
    painter->setPen(Qt::white);
    painter->setFont(f);
    painter->drawText(r, Qt::AlignCenter, tag);
  }
}

void PcgNodeItem::mousePressEvent(QGraphicsSceneMouseEvent* event) {
  if (PcgScene* s = pcgScene()) emit s->nodeClicked(node_.key);
  event->accept();
}

void PcgNodeItem::mouseDoubleClickEvent(QGraphicsSceneMouseEvent* event) {
  if (PcgScene* s = pcgScene()) emit s->nodeDoubleClicked(node_.key);
  event->accept();
}

// --- edges ---------------------------------------------------------------------------------------

PcgEdgeItem::PcgEdgeItem(const DisplayEdge& edge, const LayoutEdge& layout, const QFont& labelFont)
    : edge_(edge), font_(labelFont) {
  setAcceptedMouseButtons(Qt::NoButton);
  setZValue(1);
  const QList<QPointF>& p = layout.spline;
  if (!p.isEmpty()) {
    path_.moveTo(p.front());
    for (qsizetype i = 1; i + 2 < p.size(); i += 3) path_.cubicTo(p[i], p[i + 1], p[i + 2]);
  }
  if (layout.hasArrow && !p.isEmpty()) {
    const QPointF tip = layout.arrowTip;
    const QPointF from = p.back();
    QLineF axis(tip, from);
    if (axis.length() < 0.1) axis = QLineF(tip, tip + QPointF(0, -1));
    axis.setLength(std::max(axis.length(), 1.0));
    QLineF side1 = axis, side2 = axis;
    side1.setAngle(axis.angle() + 22);
    side2.setAngle(axis.angle() - 22);
    side1.setLength(axis.length());
    side2.setLength(axis.length());
    arrow_ << tip << side1.p2() << side2.p2();
  } else if (!p.isEmpty()) {
    path_.lineTo(p.back());
  }
  if (layout.hasLabel && !edge.label.isEmpty()) {
    const QFontMetricsF m(font_);
    const QSizeF size(m.horizontalAdvance(edge.label) + 6, m.height() + 2);
    labelRect_ = QRectF(layout.labelCenter - QPointF(size.width() / 2, size.height() / 2), size);
    label_.setText(edge.label);
    label_.setTextFormat(Qt::PlainText);
    label_.setPerformanceHint(QStaticText::AggressiveCaching);
    label_.prepare(QTransform(), font_);
  }
  bounds_ =
      path_.boundingRect().united(arrow_.boundingRect()).united(labelRect_).adjusted(-3, -3, 3, 3);
  setToolTip(edge.label);
}

void PcgEdgeItem::setEmphasised(bool on) {
  if (on == emphasised_) return;
  emphasised_ = on;
  setZValue(on ? 1.5 : 1);
  update();
}

void PcgEdgeItem::paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget*) {
  const double lod = option->levelOfDetailFromTransform(painter->worldTransform());
  painter->setRenderHint(QPainter::Antialiasing, true);
  const QColor colour = emphasised_ ? selectionColor() : QColor(0x60, 0x70, 0x80);
  painter->setPen(QPen(colour, emphasised_ ? 2.2 : 1.1));
  painter->setBrush(Qt::NoBrush);
  painter->drawPath(path_);
  if (!arrow_.isEmpty()) {
    painter->setBrush(colour);
    painter->drawPolygon(arrow_);
  }
  if (labelRect_.isNull() || lod < kTextLod) return;
  painter->setPen(Qt::NoPen);
  painter->setBrush(QColor(255, 255, 255, 215));
  painter->drawRoundedRect(labelRect_, 3, 3);
  painter->setPen(emphasised_ ? selectionColor().darker(130) : QColor(0x26, 0x32, 0x38));
  painter->setFont(font_);
  painter->drawStaticText(
      labelRect_.center() - QPointF(label_.size().width() / 2, label_.size().height() / 2), label_);
}

// --- clusters ------------------------------------------------------------------------------------

PcgClusterItem::PcgClusterItem(int block, const QString& title, const QRectF& rect,
                               const QFont& font)
    : block_(block), title_(title), rect_(rect), font_(font) {
  setAcceptedMouseButtons(Qt::LeftButton);
  setZValue(0);
  setToolTip(QObject::tr("Block %1: click the header to collapse it").arg(title));
}

QRectF PcgClusterItem::headerRect() const {
  return QRectF(rect_.left(), rect_.top(), rect_.width(), QFontMetricsF(font_).height() + 6);
}

void PcgClusterItem::paint(QPainter* painter, const QStyleOptionGraphicsItem*, QWidget*) {
  painter->setRenderHint(QPainter::Antialiasing, true);
  painter->setPen(QPen(QColor(0x90, 0xa4, 0xae), 1, Qt::DashLine));
  painter->setBrush(QColor(0xf4, 0xf6, 0xf8));
  painter->drawRoundedRect(rect_, 6, 6);
  painter->setPen(QColor(0x45, 0x5a, 0x64));
  painter->setFont(font_);
  painter->drawText(headerRect().adjusted(8, 0, -8, 0), Qt::AlignLeft | Qt::AlignVCenter,
                    QStringLiteral("▾ %1").arg(title_));
}

void PcgClusterItem::mousePressEvent(QGraphicsSceneMouseEvent* event) {
  if (headerRect().contains(event->pos())) {
    if (auto* s = static_cast<PcgScene*>(scene())) emit s->clusterHeaderClicked(block_);
    event->accept();
    return;
  }
  event->ignore();
}

}  // namespace unity::views
