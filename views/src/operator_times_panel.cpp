#include "unity/views/operator_times_panel.h"

#include <QChart>
#include <QChartView>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QScatterSeries>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

#include "category_colors.h"
#include "table_style.h"

namespace unity::views {
namespace {

QTableWidgetItem* cell(const QString& text, bool number) {
  auto* item = new QTableWidgetItem(text);
  if (number) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
  return item;
}

}  // namespace

OperatorTimesPanel::OperatorTimesPanel(QWidget* parent)
    : QWidget(parent),
      title_(new QLabel(this)),
      table_(new QTableWidget(this)),
      chart_(new QChartView(this)),
      points_(new QScatterSeries),
      equal_(new QLineSeries),
      x_(new QLogValueAxis),
      y_(new QLogValueAxis) {
  setObjectName(QStringLiteral("operatorTimes"));
  title_->setTextFormat(Qt::RichText);
  const QStringList headers{tr("Operator"), tr("Type"), tr("Predicted ms"), tr("Measured ms"),
                            tr("Error")};
  table_->setColumnCount(int(headers.size()));
  table_->setHorizontalHeaderLabels(headers);
  table_->setObjectName(QStringLiteral("operatorTimesTable"));
  applyReadOnlyTableStyle(table_);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->horizontalHeader()->setStretchLastSection(true);

  auto* chart = new QChart;
  chart->setTitle(tr("Measured against predicted, one point per operator"));
  chart->legend()->setAlignment(Qt::AlignBottom);
  chart->setMargins(QMargins(4, 4, 4, 4));
  for (QLogValueAxis* axis : {x_, y_}) {
    axis->setBase(10);
    axis->setLabelFormat(QStringLiteral("%.3g"));
    axis->setMinorTickCount(-1);
  }
  y_->setTitleText(tr("measured ms"));
  chart->addAxis(x_, Qt::AlignBottom);
  chart->addAxis(y_, Qt::AlignLeft);
  equal_->setName(tr("measured = predicted"));
  QPen pen(categoryColor(OpCategory::Parallel));
  pen.setStyle(Qt::DashLine);
  pen.setWidthF(1.5);
  equal_->setPen(pen);
  points_->setName(tr("operators"));
  points_->setMarkerSize(8);
  points_->setColor(selectionColor());
  points_->setBorderColor(selectionColor());
  for (QAbstractSeries* s :
       {static_cast<QAbstractSeries*>(equal_), static_cast<QAbstractSeries*>(points_)}) {
    chart->addSeries(s);
    s->attachAxis(x_);
    s->attachAxis(y_);
  }
  chart_->setChart(chart);
  chart_->setRenderHint(QPainter::Antialiasing);
  chart_->setMinimumHeight(220);

  auto* row = new QHBoxLayout;
  row->setContentsMargins(0, 0, 0, 0);
  row->addWidget(table_, 3);
  row->addWidget(chart_, 2);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(2);
  layout->addWidget(title_);
  layout->addLayout(row, 1);
  clear();
}

void OperatorTimesPanel::clear() {
  table_->setRowCount(0);
  points_->clear();
  equal_->clear();
  title_->clear();
}

int OperatorTimesPanel::pointCount() const { return int(points_->count()); }

void OperatorTimesPanel::setRows(const std::vector<use_cases::OperatorTimes>& rows,
                                 const QString& machine) {
  clear();
  title_->setText(tr("<b>Operators: predicted on %1 against measured</b> &nbsp;largest error "
                     "first; points above the line ran slower than predicted")
                      .arg(machine.toHtmlEscaped()));
  x_->setTitleText(tr("predicted ms (%1)").arg(machine));
  table_->setRowCount(int(rows.size()));
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  for (int i = 0; i < int(rows.size()); ++i) {
    const auto& r = rows[i];
    const double e = r.error();
    table_->setItem(i, 0, cell(QString::fromStdString(r.name), false));
    table_->setItem(i, 1, cell(QString::fromStdString(r.op), false));
    table_->setItem(i, 2, cell(QString::number(r.predicted_ms, 'f', 4), true));
    table_->setItem(i, 3, cell(QString::number(r.measured_ms, 'f', 4), true));
    table_->setItem(i, 4,
                    cell(std::isfinite(e) ? tr("%1x %2")
                                                .arg(e, 0, 'f', 2)
                                                .arg(r.measured_ms > r.predicted_ms ? tr("slower")
                                                                                    : tr("faster"))
                                          : QStringLiteral("-"),
                         true));
    // A log axis has no place for zero: operators with a zero time are in the table only.
    if (r.predicted_ms > 0 && r.measured_ms > 0) {
      points_->append(r.predicted_ms, r.measured_ms);
      lo = std::min({lo, r.predicted_ms, r.measured_ms});
      hi = std::max({hi, r.predicted_ms, r.measured_ms});
    }
  }
  table_->resizeColumnsToContents();
  if (hi > 0) {
    const double from = std::pow(10.0, std::floor(std::log10(lo)));
    const double to = std::pow(10.0, std::ceil(std::log10(hi * 1.0001)));
    x_->setRange(from, to);
    y_->setRange(from, to);
    equal_->append(from, from);
    equal_->append(to, to);
  }
}

}  // namespace unity::views
