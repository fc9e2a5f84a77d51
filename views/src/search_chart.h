#pragma once
// The search view's chart (Qt Charts): every costed candidate as a dot and the best predicted
// iteration time so far as a step line, against seconds since the search started.
#include <QChartView>
#include <QList>
#include <QTimer>

#include "unity/views/search_runner.h"

class QLineSeries;
class QScatterSeries;
class QValueAxis;

namespace unity::views {

class SearchChart : public QChartView {
  Q_OBJECT

 public:
  explicit SearchChart(QWidget* parent = nullptr);
  void reset(double startMs);
  void addCandidates(const QList<CandidatePoint>& points);
  void finish(double elapsed, double bestMs);
  int candidateCount() const { return total_; }  // candidates received (the chart may thin them)
  int drawnCandidateCount() const;
  int bestPointCount() const;
  void flush();  // draws what arrived since the last redraw
  QLineSeries* bestSeries() const { return best_; }

 private:
  void extendBest(double elapsed, double ms);
  void rescale();

  // Qt Charts keeps one graphics item per scatter marker: thousands of candidates would make every
  // update slower than the last. Dots arrive in batches, are redrawn a few times a second, and are
  // thinned to at most kMaxDots (every new best is kept).
  static constexpr int kMaxDots = 600;
  static constexpr int kRedrawMs = 250;
  QList<QPointF> dots_;
  QList<QPointF> pendingDots_;
  int total_ = 0;
  QTimer redraw_;

  QLineSeries* best_;
  QScatterSeries* candidates_;
  QValueAxis* x_;
  QValueAxis* y_;
  double bestMs_ = 0;
  int segment_ = -1;  // the piece the best line follows now (graph splitting)
  bool split_ = false;
  double minMs_ = 0, maxMs_ = 0, maxT_ = 0;
};

}  // namespace unity::views
