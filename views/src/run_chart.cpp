#include "run_chart.h"

#include <QChart>
#include <QHBoxLayout>
#include <QLineSeries>
#include <QScatterSeries>
#include <QValueAxis>

#include <algorithm>

#include "category_colors.h"

namespace unity::views {

namespace {

QChartView* makeChart(const QString& title, QValueAxis* x, QValueAxis* y, const QString& yTitle,
                      QWidget* parent) {
  auto* chart = new QChart;
  chart->setTitle(title);
  chart->legend()->setAlignment(Qt::AlignBottom);
  chart->setMargins(QMargins(4, 4, 4, 4));
  x->setTitleText(QObject::tr("iteration"));
  x->setLabelFormat(QStringLiteral("%d"));
  y->setTitleText(yTitle);
  y->setLabelFormat(QStringLiteral("%.3g"));
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  auto* view = new QChartView(chart, parent);
  view->setRenderHint(QPainter::Antialiasing);
  view->setMinimumHeight(180);
  return view;
}

void attach(QChart* chart, QAbstractSeries* series, QValueAxis* x, QValueAxis* y) {
  chart->addSeries(series);
  series->attachAxis(x);
  series->attachAxis(y);
}

}  // namespace

RunChart::RunChart(QWidget* parent)
    : QWidget(parent),
      measured_(new QLineSeries),
      warmup_(new QScatterSeries),
      predicted_(new QLineSeries),
      lossLine_(new QLineSeries),
      timeX_(new QValueAxis),
      timeY_(new QValueAxis),
      lossX_(new QValueAxis),
      lossY_(new QValueAxis) {
  time_ = makeChart(tr("Time per iteration"), timeX_, timeY_, tr("ms"), this);
  loss_ = makeChart(tr("Training loss"), lossX_, lossY_, tr("loss"), this);
  measured_->setName(tr("measured (slowest rank)"));
  QPen measuredPen(selectionColor());
  measuredPen.setWidthF(2);
  measured_->setPen(measuredPen);
  measured_->setPointsVisible(true);
  warmup_->setName(tr("warm-up"));
  warmup_->setMarkerSize(7);
  warmup_->setColor(QColor(0x90, 0xa4, 0xae));
  warmup_->setBorderColor(QColor(0x90, 0xa4, 0xae));
  predicted_->setName(tr("predicted on this CPU"));
  QPen predictedPen(categoryColor(OpCategory::Parallel));
  predictedPen.setWidthF(2);
  predictedPen.setStyle(Qt::DashLine);
  predicted_->setPen(predictedPen);
  attach(time_->chart(), warmup_, timeX_, timeY_);
  attach(time_->chart(), measured_, timeX_, timeY_);
  attach(time_->chart(), predicted_, timeX_, timeY_);
  lossLine_->setName(tr("loss"));
  QPen lossPen(newBestColor());
  lossPen.setWidthF(2);
  lossLine_->setPen(lossPen);
  lossLine_->setPointsVisible(true);
  attach(loss_->chart(), lossLine_, lossX_, lossY_);
  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(time_, 1);
  layout->addWidget(loss_, 1);
  reset();
}

void RunChart::reset() {
  measured_->clear();
  warmup_->clear();
  lossLine_->clear();
  predictedMs_ = 0;
  maxMs_ = 0;
  minLoss_ = maxLoss_ = 0;
  lastIndex_ = 0;
  rescale();
}

void RunChart::setPredicted(double cpuMs) {
  predictedMs_ = cpuMs;
  rescale();
}

void RunChart::addIterations(const QList<RunIteration>& iterations) {
  for (const RunIteration& it : iterations) {
    const int x = it.index + 1;  // iterations are numbered from 1 on the axis
    (it.warmup ? static_cast<QXYSeries*>(warmup_) : measured_)->append(x, it.ms);
    maxMs_ = std::max(maxMs_, it.ms);
    if (lossLine_->count() == 0) minLoss_ = maxLoss_ = it.loss;
    minLoss_ = std::min(minLoss_, it.loss);
    maxLoss_ = std::max(maxLoss_, it.loss);
    lossLine_->append(x, it.loss);
    lastIndex_ = std::max(lastIndex_, x);
  }
  rescale();
}

int RunChart::measuredPointCount() const { return int(measured_->count()); }
int RunChart::lossPointCount() const { return int(lossLine_->count()); }

void RunChart::rescale() {
  const int last = std::max(lastIndex_, 2);
  timeX_->setRange(1, last);
  lossX_->setRange(1, last);
  timeX_->setTickCount(std::min(last, 11));
  lossX_->setTickCount(std::min(last, 11));
  predicted_->clear();
  if (predictedMs_ > 0) {
    predicted_->append(1, predictedMs_);
    predicted_->append(last, predictedMs_);
  }
  const double top = std::max({maxMs_, predictedMs_, 1e-3});
  timeY_->setRange(0, top * 1.15);
  const double span = std::max(maxLoss_ - minLoss_, std::max(1e-3, maxLoss_ * 0.01));
  lossY_->setRange(std::max(0.0, minLoss_ - span * 0.15), maxLoss_ + span * 0.15);
}

}  // namespace unity::views
