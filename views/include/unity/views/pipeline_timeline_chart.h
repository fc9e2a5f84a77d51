#pragma once
// A pipeline timeline as a Gantt chart: one row per pipeline stage (labelled with its layers), one
// box per forward or backward pass of a micro-batch (forward blue, backward orange, the
// micro-batch's number inside when it fits), the bubbles left empty (hatched), a time axis in ms
// over the whole iteration and a caption with the makespan and the bubble fraction. Under each
// stage's row, a thinner lane of its communication: point-to-point sends and the gradient
// synchronisation, light where compute hides them and strong where the stage waits for them, the
// expert all-to-alls (dispatch and combine, green) and the context-parallel K/V exchange (brown)
// likewise, and the optimizer step that ends the iteration. It draws what core's
// pipeline_schedule.h computes (predicted from a plan) or what a run measured; it computes
// nothing itself. Painted directly: thousands of boxes are cheap to paint and costly as items.
//
// Export (context menu): PNG (twice the widget's resolution), SVG (QSvgGenerator) and the Chrome
// trace format (core's chrome_trace, for Perfetto and chrome://tracing).
#include <QList>
#include <QRectF>
#include <QString>
#include <QWidget>

#include "unity/core/pipeline/pipeline_schedule.h"

namespace unity::views {

class PipelineTimelineChart : public QWidget {
  Q_OBJECT

 public:
  explicit PipelineTimelineChart(QWidget* parent = nullptr);

  // `title`: "Predicted", "Measured"; shown before the caption and used as the trace's title.
  void setTimeline(const PipelineTimeline& timeline, const QString& title);
  // The title of a plan's predicted timeline: the plan's iteration (what every table states),
  // beside which the caption gives the drawn schedule's own end, simulated pass by pass.
  static QString predictedTitle(double iteration_seconds);
  // No timeline: the message instead ("Not a pipelined plan").
  void clear(const QString& message);
  bool hasTimeline() const { return has_; }
  const PipelineTimeline& timeline() const { return timeline_; }
  int boxCount() const { return has_ ? int(timeline_.boxes.size()) : 0; }
  QString title() const { return title_; }
  QString message() const { return message_; }
  // "Predicted · makespan 16.37 s · bubble 4.3% · 8 stages × 32 micro-batches × 5 chunks"
  QString caption() const;

  // Seconds the time axis spans (0: the timeline's own iteration, end()). Two charts shown one
  // above the other share a scale so that their boxes compare.
  void setTimeScale(double seconds);
  double timeScale() const;

  // Where each box (in timeline().boxes order) and each row are drawn in a picture of `size`.
  QList<QRectF> boxRects(const QSizeF& size) const;
  QList<QRectF> rowRects(const QSizeF& size) const;  // a stage's compute row and its lane
  // Where each communication box (in timeline().comm order) is drawn: in its stage's lane.
  QList<QRectF> commRects(const QSizeF& size) const;
  QRectF laneRect(const QSizeF& size, int rank) const;  // empty without communication
  // Paints the chart into `size` (the widget, the PNG and SVG exports).
  void paintChart(QPainter& painter, const QSizeF& size) const;

  // Writes PNG or SVG (by the suffix); false with *error.
  bool exportImage(const QString& path, QString* error) const;
  bool exportChromeTrace(const QString& path, QString* error) const;
  void exportWithDialog();

  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 protected:
  void paintEvent(QPaintEvent* event) override;
  void contextMenuEvent(QContextMenuEvent* event) override;

 private:
  struct Geometry {
    QRectF plot;               // where the rows are
    double rowHeight = 0;      // a stage's band: its compute row and its communication lane
    double computeHeight = 0;  // of which the compute row (all of it without communication)
    double secondsToPixels = 0;
  };
  Geometry geometry(const QSizeF& size) const;
  QString rowLabel(int rank, bool brief = false) const;
  QString captionText(const QSizeF& size) const;  // brief in narrow pictures
  double keyWidth() const;                        // the colour key's, in the widget's font
  bool keyOnOwnLine(const QSizeF& size) const;    // under the caption (room for the lanes')

  PipelineTimeline timeline_;
  QString title_;
  QString message_;
  double scale_ = 0;
  bool has_ = false;
};

}  // namespace unity::views
