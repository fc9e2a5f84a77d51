#include "unity/views/minimap.h"

#include <QGraphicsScene>
#include <QMouseEvent>
#include <QPainter>

#include "unity/views/graph_canvas.h"

namespace unity::views {

namespace {
constexpr int kRefreshDelayMs = 250;
constexpr int kMinimapMargin = 4;
}  // namespace

Minimap::Minimap(GraphCanvas* canvas, QWidget* parent) : QWidget(parent), canvas_(canvas) {
  setObjectName(QStringLiteral("minimap"));
  setAttribute(Qt::WA_OpaquePaintEvent, false);
  setCursor(Qt::PointingHandCursor);
  setToolTip(tr("Overview: click or drag to move there"));
  refresh_.setSingleShot(true);
  refresh_.setInterval(kRefreshDelayMs);
  connect(&refresh_, &QTimer::timeout, this, &Minimap::refreshNow);
  connect(canvas_, &GraphCanvas::viewportMoved, this, &Minimap::followCanvas);
}

void Minimap::followCanvas() {
  // Only useful when part of the graph is off screen.
  QGraphicsScene* scene = canvas_->scene();
  const bool needed =
      scene && !scene->sceneRect().isEmpty() &&
      !canvas_->visibleSceneRect().adjusted(-2, -2, 2, 2).contains(scene->sceneRect());
  setVisible(needed);
  if (needed) update();
}

void Minimap::refreshSoon() {
  if (!refresh_.isActive()) refresh_.start();
}

void Minimap::refreshNow() {
  refresh_.stop();
  QGraphicsScene* scene = canvas_->scene();
  sceneRect_ = scene ? scene->sceneRect() : QRectF();
  if (!scene || sceneRect_.isEmpty()) {
    thumbnail_ = QPixmap();
    update();
    return;
  }
  const QSizeF room = QSizeF(size()) - QSizeF(2 * kMinimapMargin, 2 * kMinimapMargin);
  const QSize px =
      sceneRect_.size().scaled(room, Qt::KeepAspectRatio).toSize().expandedTo(QSize(1, 1));
  QPixmap pixmap(px);
  pixmap.fill(Qt::white);
  QPainter painter(&pixmap);
  painter.setRenderHint(QPainter::Antialiasing, true);
  scene->render(&painter, QRectF(QPointF(0, 0), QSizeF(px)), sceneRect_, Qt::KeepAspectRatio);
  painter.end();
  thumbnail_ = pixmap;
  followCanvas();
}

QRectF Minimap::thumbnailRect() const {
  const QSizeF s = thumbnail_.size();
  return QRectF(QPointF((width() - s.width()) / 2, (height() - s.height()) / 2), s);
}

QRectF Minimap::viewportFrame() const {
  if (thumbnail_.isNull() || sceneRect_.isEmpty()) return {};
  const QRectF t = thumbnailRect();
  const double k = t.width() / sceneRect_.width();
  const QRectF v = canvas_->visibleSceneRect().intersected(sceneRect_);
  return QRectF(t.left() + (v.left() - sceneRect_.left()) * k,
                t.top() + (v.top() - sceneRect_.top()) * k, v.width() * k, v.height() * k);
}

void Minimap::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing, true);
  p.setPen(QColor(0x90, 0xa4, 0xae));
  p.setBrush(QColor(255, 255, 255, 235));
  p.drawRoundedRect(QRectF(rect()).adjusted(0.5, 0.5, -0.5, -0.5), 4, 4);
  if (thumbnail_.isNull()) return;
  p.drawPixmap(thumbnailRect().topLeft(), thumbnail_);
  const QRectF frame = viewportFrame();
  p.setPen(QPen(QColor(0x1e, 0x88, 0xe5), 1.5));
  p.setBrush(QColor(0x1e, 0x88, 0xe5, 40));
  p.drawRect(frame);
}

void Minimap::moveCanvasTo(const QPointF& pos) {
  if (thumbnail_.isNull()) return;
  const QRectF t = thumbnailRect();
  const double k = sceneRect_.width() / t.width();
  canvas_->centerOnScene(sceneRect_.topLeft() + (pos - t.topLeft()) * k);
}

void Minimap::mousePressEvent(QMouseEvent* event) { moveCanvasTo(event->position()); }

void Minimap::mouseMoveEvent(QMouseEvent* event) {
  if (event->buttons() & Qt::LeftButton) moveCanvasTo(event->position());
}

}  // namespace unity::views
