#pragma once
// The zoomable, pannable view of a PcgScene: drag to pan, Ctrl+wheel (or pinch) to zoom around the
// cursor, +/-/0 and F on the keyboard. It reports zoom and scroll changes so a minimap and a second
// canvas (the compare view) can follow.
#include <QGraphicsView>

namespace unity::views {

class GraphCanvas : public QGraphicsView {
  Q_OBJECT

 public:
  explicit GraphCanvas(QWidget* parent = nullptr);

  double zoom() const;        // 1: one scene unit per pixel
  void setZoom(double zoom);  // clamped to [minZoom, maxZoom], keeps the centre
  void zoomBy(double factor);
  void fitAll();  // the whole scene, never above 100 %
  // Fits the width when the graph is tall and readable that way; otherwise shows its top at a
  // readable zoom (what users want to see first of a long network).
  void showStart();
  QRectF visibleSceneRect() const;
  void centerOnScene(const QPointF& p);

  static constexpr double kMinZoom = 0.02;
  static constexpr double kMaxZoom = 4.0;

 signals:
  void zoomChanged(double zoom);
  void viewportMoved();

 protected:
  void wheelEvent(QWheelEvent* event) override;
  void keyPressEvent(QKeyEvent* event) override;
  void scrollContentsBy(int dx, int dy) override;
  void resizeEvent(QResizeEvent* event) override;
  bool viewportEvent(QEvent* event) override;
};

}  // namespace unity::views
