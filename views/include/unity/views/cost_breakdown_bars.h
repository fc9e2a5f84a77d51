#pragma once
// Cost breakdown of two plans side by side: iteration time, computation, communication (time and
// bytes sent) and peak memory per device, each pair of bars scaled to the larger of the two, with
// the values written on them. Painted directly: five short rows read better than a chart with mixed
// units.
#include <QList>
#include <QString>
#include <QWidget>

#include "unity/core/plan/plan.h"

namespace unity::views {

class CostBreakdownBars : public QWidget {
  Q_OBJECT

 public:
  struct Metric {
    QString name;
    double left = 0;
    double right = 0;
    QString leftText;
    QString rightText;
  };

  explicit CostBreakdownBars(QWidget* parent = nullptr);

  // Either plan may be null (its bars are left out).
  void setPlans(const Plan* left, const QString& leftTitle, const Plan* right,
                const QString& rightTitle);
  const QList<Metric>& metrics() const { return metrics_; }
  QString verdict() const { return verdict_; }  // "Joint is 2.31× faster than Sequential"
  QSize sizeHint() const override;

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  QList<Metric> metrics_;
  QString leftTitle_, rightTitle_, verdict_;
  bool hasLeft_ = false, hasRight_ = false;
};

}  // namespace unity::views
