#pragma once
// Where the cost model is wrong, per operator, after a profiled run: a table of each operator's
// predicted and measured time, largest error first, and a scatter plot of one point per operator
// (predicted across, measured up, both logarithmic) against the line where they are equal.
#include <QWidget>

#include <vector>

#include "unity/use_cases/operator_times.h"

class QChartView;
class QLabel;
class QLineSeries;
class QLogValueAxis;
class QScatterSeries;
class QTableWidget;

namespace unity::views {

class OperatorTimesPanel : public QWidget {
  Q_OBJECT

 public:
  explicit OperatorTimesPanel(QWidget* parent = nullptr);
  // `machine`: where the prediction is for (the plan's machine).
  void setRows(const std::vector<use_cases::OperatorTimes>& rows, const QString& machine);
  void clear();

  QTableWidget* table() const { return table_; }
  QChartView* chart() const { return chart_; }
  int pointCount() const;  // operators in the scatter plot

 private:
  QLabel* title_;
  QTableWidget* table_;
  QChartView* chart_;
  QScatterSeries* points_;
  QLineSeries* equal_;
  QLogValueAxis* x_;
  QLogValueAxis* y_;
};

}  // namespace unity::views
