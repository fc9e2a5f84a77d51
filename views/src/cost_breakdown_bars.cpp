#include "unity/views/cost_breakdown_bars.h"

#include <QFontMetrics>
#include <QPainter>

#include <algorithm>

#include "unity/views/display_format.h"

namespace unity::views {

namespace {
constexpr int kRowHeight = 34;
constexpr int kBarHeight = 13;
constexpr int kLabelWidth = 170;
constexpr int kTop = 26;
const QColor kLeftColour(0x5c, 0x6b, 0xc0);
const QColor kRightColour(0x26, 0xa6, 0x9a);
}  // namespace

CostBreakdownBars::CostBreakdownBars(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("costBreakdown"));
  setMinimumHeight(kTop + 5 * kRowHeight + 8);
}

QSize CostBreakdownBars::sizeHint() const { return {560, kTop + 5 * kRowHeight + 8}; }

void CostBreakdownBars::setPlans(const Plan* left, const QString& leftTitle, const Plan* right,
                                 const QString& rightTitle) {
  leftTitle_ = leftTitle;
  rightTitle_ = rightTitle;
  hasLeft_ = left != nullptr;
  hasRight_ = right != nullptr;
  metrics_.clear();
  const PlanSummary empty;
  const PlanSummary& a = left ? left->summary : empty;
  const PlanSummary& b = right ? right->summary : empty;
  metrics_.append({tr("Iteration time"), a.iteration_time_ms, b.iteration_time_ms,
                   formatMs(a.iteration_time_ms), formatMs(b.iteration_time_ms)});
  metrics_.append({tr("Computation"), a.compute_ms, b.compute_ms, formatMs(a.compute_ms),
                   formatMs(b.compute_ms)});
  metrics_.append({tr("Communication"), a.communication_ms, b.communication_ms,
                   formatMs(a.communication_ms), formatMs(b.communication_ms)});
  metrics_.append({tr("Sent per iteration"), a.communication_bytes, b.communication_bytes,
                   formatBytes(a.communication_bytes), formatBytes(b.communication_bytes)});
  metrics_.append({tr("Peak memory / device"), a.peak_memory_bytes, b.peak_memory_bytes,
                   formatBytes(a.peak_memory_bytes) +
                       (a.fits_in_memory || !left ? QString() : tr(" (does not fit)")),
                   formatBytes(b.peak_memory_bytes) +
                       (b.fits_in_memory || !right ? QString() : tr(" (does not fit)"))});
  verdict_.clear();
  if (left && right && a.iteration_time_ms > 0 && b.iteration_time_ms > 0) {
    const double ratio = a.iteration_time_ms / b.iteration_time_ms;
    if (ratio > 1.005)
      verdict_ =
          tr("%1 is %2× faster than %3").arg(rightTitle, QString::number(ratio, 'f', 2), leftTitle);
    else if (ratio < 0.995)
      verdict_ = tr("%1 is %2× faster than %3")
                     .arg(leftTitle, QString::number(1 / ratio, 'f', 2), rightTitle);
    else
      verdict_ = tr("Both plans are predicted to take the same time");
  }
  update();
}

void CostBreakdownBars::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing, true);
  p.fillRect(rect(), palette().base());
  QFont bold = font();
  bold.setBold(true);
  p.setFont(bold);
  p.setPen(palette().text().color());
  p.drawText(QRect(8, 4, width() - 16, 18), Qt::AlignLeft | Qt::AlignVCenter,
             verdict_.isEmpty() ? tr("Cost breakdown") : verdict_);
  // Legend on the right of the title line.
  QFont normal = font();
  p.setFont(normal);
  const QFontMetrics fm(normal);
  int x = width() - 8;
  for (const auto& [title, colour, shown] : {std::tuple{rightTitle_, kRightColour, hasRight_},
                                             std::tuple{leftTitle_, kLeftColour, hasLeft_}}) {
    if (!shown) continue;
    const int w = fm.horizontalAdvance(title);
    x -= w;
    p.setPen(palette().text().color());
    p.drawText(QRect(x, 4, w, 18), Qt::AlignVCenter, title);
    x -= 16;
    p.fillRect(QRect(x, 8, 11, 11), colour);
    x -= 14;
  }
  const int barLeft = kLabelWidth;
  const int barWidth = std::max(40, width() - barLeft - 12);
  for (qsizetype i = 0; i < metrics_.size(); ++i) {
    const Metric& m = metrics_[i];
    const int y = kTop + int(i) * kRowHeight;
    p.setPen(palette().text().color());
    p.drawText(QRect(8, y, kLabelWidth - 12, 2 * kBarHeight + 2), Qt::AlignLeft | Qt::AlignVCenter,
               m.name);
    const double top = std::max({m.left, m.right, 1e-30});
    int row = 0;
    for (const auto& [value, text, colour, shown] :
         {std::tuple{m.left, m.leftText, kLeftColour, hasLeft_},
          std::tuple{m.right, m.rightText, kRightColour, hasRight_}}) {
      const int by = y + row * (kBarHeight + 2);
      ++row;
      if (!shown) continue;
      const int w = std::max(2, int(barWidth * 0.72 * value / top));
      p.fillRect(QRect(barLeft, by, w, kBarHeight), colour);
      p.setPen(palette().text().color());
      p.drawText(QRect(barLeft + w + 6, by - 2, barWidth - w, kBarHeight + 4),
                 Qt::AlignLeft | Qt::AlignVCenter, text);
    }
  }
}

}  // namespace unity::views
