#pragma once
// The run view's two charts (Qt Charts): measured time per iteration, with the cost model's
// prediction for this CPU as a dashed line, and the loss per iteration. Warm-up iterations are
// drawn grey: they are not part of the measured median.
#include <QChartView>
#include <QList>
#include <QWidget>

#include "unity/views/run_runner.h"

class QLineSeries;
class QScatterSeries;
class QValueAxis;

namespace unity::views {

class RunChart : public QWidget {
  Q_OBJECT

 public:
  explicit RunChart(QWidget* parent = nullptr);
  void reset();
  void setPredicted(double cpuMs);  // 0: no line
  void addIterations(const QList<RunIteration>& iterations);
  int measuredPointCount() const;
  int lossPointCount() const;
  QChartView* timeChart() const { return time_; }
  QChartView* lossChart() const { return loss_; }

 private:
  void rescale();

  QChartView* time_;
  QChartView* loss_;
  QLineSeries* measured_;
  QScatterSeries* warmup_;
  QLineSeries* predicted_;
  QLineSeries* lossLine_;
  QValueAxis* timeX_;
  QValueAxis* timeY_;
  QValueAxis* lossX_;
  QValueAxis* lossY_;
  double predictedMs_ = 0;
  double maxMs_ = 0;
  double minLoss_ = 0, maxLoss_ = 0;
  int lastIndex_ = 0;
};

}  // namespace unity::views
