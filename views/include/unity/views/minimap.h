#pragma once
// The whole graph in a corner of the canvas, with the visible part framed: click or drag in it to
// move there. It paints a cached thumbnail (re-rendered when the graph changes, at most a few times
// a second), so scrolling a big graph never re-draws it.
#include <QPixmap>
#include <QTimer>
#include <QWidget>

namespace unity::views {

class GraphCanvas;

class Minimap : public QWidget {
  Q_OBJECT

 public:
  explicit Minimap(GraphCanvas* canvas, QWidget* parent = nullptr);

  // Re-renders the thumbnail soon (coalesces bursts of calls).
  void refreshSoon();
  void refreshNow();
  // Where the canvas' visible rectangle is drawn, in this widget's coordinates.
  QRectF viewportFrame() const;
  QSize thumbnailSize() const { return thumbnail_.size(); }

 protected:
  void paintEvent(QPaintEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;

 private:
  QRectF thumbnailRect() const;  // where the scene is drawn in this widget
  void followCanvas();           // shows the minimap only when part of the graph is off screen
  void moveCanvasTo(const QPointF& widgetPos);

  GraphCanvas* canvas_;
  QPixmap thumbnail_;
  QRectF sceneRect_;
  QTimer refresh_;
};

}  // namespace unity::views
