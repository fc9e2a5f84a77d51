#include "unity/views/graph_canvas.h"

#include <QGestureEvent>
#include <QKeyEvent>
#include <QNativeGestureEvent>
#include <QScrollBar>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>

namespace unity::views {

namespace {
constexpr double kStep = 1.25;
constexpr double kReadableZoom = 0.75;
}  // namespace

GraphCanvas::GraphCanvas(QWidget* parent) : QGraphicsView(parent) {
  setDragMode(QGraphicsView::ScrollHandDrag);
  setRenderHints(QPainter::Antialiasing | QPainter::TextAntialiasing);
  setTransformationAnchor(QGraphicsView::AnchorUnderMouse);
  setResizeAnchor(QGraphicsView::AnchorViewCenter);
  setViewportUpdateMode(QGraphicsView::SmartViewportUpdate);
  setOptimizationFlags(QGraphicsView::DontSavePainterState);
  setFrameShape(QFrame::NoFrame);
  setBackgroundBrush(Qt::white);
  setFocusPolicy(Qt::StrongFocus);
}

double GraphCanvas::zoom() const { return transform().m11(); }

void GraphCanvas::setZoom(double z) {
  z = std::clamp(z, kMinZoom, kMaxZoom);
  if (std::abs(z - zoom()) < 1e-9) return;
  const ViewportAnchor anchor = transformationAnchor();
  setTransformationAnchor(QGraphicsView::AnchorViewCenter);
  setTransform(QTransform::fromScale(z, z));
  setTransformationAnchor(anchor);
  emit zoomChanged(zoom());
  emit viewportMoved();
}

void GraphCanvas::zoomBy(double factor) {
  const double z = std::clamp(zoom() * factor, kMinZoom, kMaxZoom);
  const double f = z / zoom();
  if (std::abs(f - 1) < 1e-9) return;
  scale(f, f);
  emit zoomChanged(zoom());
  emit viewportMoved();
}

void GraphCanvas::fitAll() {
  if (!scene() || sceneRect().isEmpty()) return;
  const QRectF r = sceneRect();
  const QSizeF room = viewport()->size();
  const double z = std::min({room.width() / r.width(), room.height() / r.height(), 1.0});
  setTransform(QTransform::fromScale(std::max(z, kMinZoom), std::max(z, kMinZoom)));
  centerOn(r.center());
  emit zoomChanged(zoom());
  emit viewportMoved();
}

void GraphCanvas::showStart() {
  if (!scene() || sceneRect().isEmpty()) return;
  const QRectF r = sceneRect();
  const QSizeF room = viewport()->size();
  const double whole = std::min(room.width() / r.width(), room.height() / r.height());
  if (whole >= kReadableZoom) {
    fitAll();
    return;
  }
  const double z = std::clamp(room.width() / r.width(), kReadableZoom, 1.0);
  setTransform(QTransform::fromScale(z, z));
  const double halfW = room.width() / z / 2, halfH = room.height() / z / 2;
  centerOn(
      QPointF(r.width() * z <= room.width() ? r.center().x() : r.left() + halfW, r.top() + halfH));
  emit zoomChanged(zoom());
  emit viewportMoved();
}

QRectF GraphCanvas::visibleSceneRect() const {
  return mapToScene(viewport()->rect()).boundingRect();
}

void GraphCanvas::centerOnScene(const QPointF& p) {
  centerOn(p);
  emit viewportMoved();
}

void GraphCanvas::wheelEvent(QWheelEvent* event) {
  if (event->modifiers() & Qt::ControlModifier) {
    const double steps = event->angleDelta().y() / 120.0;
    if (steps != 0) zoomBy(std::pow(kStep, steps));
    event->accept();
    return;
  }
  QGraphicsView::wheelEvent(event);
}

bool GraphCanvas::viewportEvent(QEvent* event) {
  if (event->type() == QEvent::NativeGesture) {
    auto* g = static_cast<QNativeGestureEvent*>(event);
    if (g->gestureType() == Qt::ZoomNativeGesture) {
      zoomBy(1 + g->value());
      return true;
    }
  }
  return QGraphicsView::viewportEvent(event);
}

void GraphCanvas::keyPressEvent(QKeyEvent* event) {
  switch (event->key()) {
    case Qt::Key_Plus:
    case Qt::Key_Equal:
      zoomBy(kStep);
      return;
    case Qt::Key_Minus:
      zoomBy(1 / kStep);
      return;
    case Qt::Key_0:
      setZoom(1.0);
      return;
    case Qt::Key_F:
      fitAll();
      return;
    default:
      QGraphicsView::keyPressEvent(event);
  }
}

void GraphCanvas::scrollContentsBy(int dx, int dy) {
  QGraphicsView::scrollContentsBy(dx, dy);
  emit viewportMoved();
}

void GraphCanvas::resizeEvent(QResizeEvent* event) {
  QGraphicsView::resizeEvent(event);
  emit viewportMoved();
}

}  // namespace unity::views
