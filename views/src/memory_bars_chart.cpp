#include "unity/views/memory_bars_chart.h"

#include <QContextMenuEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QMenu>
#include <QMessageBox>
#include <QPainter>

#include <algorithm>
#include <cmath>
#include <set>

#include "axis_step.h"
#include "picture_export.h"
#include "pipeline_colors.h"
#include "unity/views/display_format.h"

namespace unity::views {

namespace {
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kMargin = 8;
constexpr double kCaptionHeight = 22;
constexpr double kLegendHeight = 20;
constexpr double kAxisWidth = 64;
constexpr double kLabelsHeight = 34;
const QColor kTotalColor(0x78, 0x90, 0x9c);

// The axis unit that reads best for the largest value: GiB for devices, MiB for test models.
std::pair<double, QString> axisUnit(double top) {
  if (top >= 0.5 * kGiB) return {kGiB, QStringLiteral("GiB")};
  if (top >= 0.5 * 1024 * 1024) return {1024.0 * 1024, QStringLiteral("MiB")};
  return {1024.0, QStringLiteral("KiB")};
}

MemoryBarsChart::Bar barOf(const MemoryBreakdown& m, int rank, bool measured) {
  MemoryBarsChart::Bar b;
  b.rank = rank;
  b.measured = measured;
  b.bytes = {m.weights - m.expert_weights,
             m.gradients - m.expert_gradients,
             m.optimizer - m.expert_optimizer,
             m.experts(),
             m.activations,
             m.workspace};
  return b;
}
}  // namespace

QString MemoryBarsChart::kindName(int kind) {
  switch (kind) {
    case Weights:
      return tr("weights");
    case Gradients:
      return tr("gradients");
    case Optimizer:
      return tr("optimizer state");
    case Experts:
      return tr("experts (weights, gradients, optimizer)");
    case Activations:
      return tr("activations in flight");
    case Workspace:
      return tr("workspace");
  }
  return {};
}

double MemoryBarsChart::Bar::total() const {
  double t = 0;
  for (double b : bytes) t += b;
  return t;
}

MemoryBarsChart::MemoryBarsChart(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("memoryBars"));
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
  message_ = tr("No memory breakdown");
}

void MemoryBarsChart::setBreakdown(const std::vector<MemoryBreakdown>& predicted,
                                   const std::vector<MemoryBreakdown>& measured,
                                   double capacityBytes, const QString& title) {
  bars_.clear();
  const size_t ranks = std::max(predicted.size(), measured.size());
  for (size_t r = 0; r < ranks; ++r) {
    if (r < predicted.size()) bars_.append(barOf(predicted[r], int(r), false));
    if (r < measured.size()) bars_.append(barOf(measured[r], int(r), true));
  }
  capacity_ = capacityBytes;
  title_ = title;
  message_.clear();
  update();
}

void MemoryBarsChart::setTotals(const std::vector<double>& perDevice, double capacityBytes,
                                const QString& title) {
  bars_.clear();
  for (size_t d = 0; d < perDevice.size(); ++d) {
    Bar b;
    b.rank = int(d);
    b.totalOnly = true;
    b.bytes[0] = perDevice[d];
    bars_.append(b);
  }
  capacity_ = capacityBytes;
  title_ = title;
  message_.clear();
  update();
}

void MemoryBarsChart::clear(const QString& message) {
  bars_.clear();
  message_ = message;
  update();
}

void MemoryBarsChart::setRankLabels(const QStringList& labels) {
  rankLabels_ = labels;
  update();
}

bool MemoryBarsChart::hasMeasured() const {
  return std::any_of(bars_.begin(), bars_.end(), [](const Bar& b) { return b.measured; });
}

bool MemoryBarsChart::hasExperts() const {
  return std::any_of(bars_.begin(), bars_.end(),
                     [](const Bar& b) { return !b.totalOnly && b.bytes[Experts] > 0; });
}

int MemoryBarsChart::groups() const {
  std::set<int> ranks;
  for (const Bar& b : bars_) ranks.insert(b.rank);
  return int(ranks.size());
}

MemoryBarsChart::Geometry MemoryBarsChart::geometry(const QSizeF& size) const {
  Geometry g;
  const double top = kMargin + kCaptionHeight + kLegendHeight + 6;
  g.plot =
      QRectF(kMargin + kAxisWidth, top, std::max(10.0, size.width() - kAxisWidth - 3 * kMargin),
             std::max(10.0, size.height() - top - kLabelsHeight - kMargin));
  double peak = 0;
  for (const Bar& b : bars_) peak = std::max(peak, b.total());
  // A device far from full is drawn to the bars' scale (a 1 MiB test model on a 6 GiB CPU would
  // be a flat line); the capacity is then written above the axis instead of drawn.
  const double most = peak < 0.25 * capacity_ ? peak : std::max(peak, capacity_);
  g.top = std::max(1.0, most * 1.1);
  const int n = std::max(1, groups());
  g.slot = g.plot.width() / n;
  const int perGroup = hasMeasured() ? 2 : 1;
  g.barWidth = std::min(90.0, g.slot * 0.7 / perGroup);
  return g;
}

QList<std::array<QRectF, MemoryBarsChart::kKinds>> MemoryBarsChart::segmentRects(
    const QSizeF& size) const {
  QList<std::array<QRectF, kKinds>> out;
  const Geometry g = geometry(size);
  const bool pairs = hasMeasured();
  int group = -1, lastRank = -1;
  for (const Bar& b : bars_) {
    if (b.rank != lastRank) {
      ++group;
      lastRank = b.rank;
    }
    const double centre = g.plot.left() + (group + 0.5) * g.slot;
    const double x =
        pairs ? (b.measured ? centre + 1 : centre - g.barWidth - 1) : centre - g.barWidth / 2;
    std::array<QRectF, kKinds> rects;
    double y = g.plot.bottom();
    for (int k = 0; k < kKinds; ++k) {
      const double h = b.bytes[size_t(k)] / g.top * g.plot.height();
      rects[size_t(k)] = QRectF(x, y - h, g.barWidth, h);
      y -= h;
    }
    out.append(rects);
  }
  return out;
}

double MemoryBarsChart::capacityY(const QSizeF& size) const {
  const Geometry g = geometry(size);
  return g.plot.bottom() - capacity_ / g.top * g.plot.height();
}

void MemoryBarsChart::paintChart(QPainter& p, const QSizeF& size) const {
  p.fillRect(QRectF(QPointF(0, 0), size), Qt::white);
  const QColor ink(0x26, 0x32, 0x38);
  const QColor grid(0xe0, 0xe0, 0xe0);
  if (bars_.isEmpty()) {
    p.setPen(QColor(0x60, 0x7d, 0x8b));
    p.drawText(QRectF(QPointF(0, 0), size).adjusted(20, 20, -20, -20),
               Qt::AlignCenter | Qt::TextWordWrap, message_);
    return;
  }
  const Geometry g = geometry(size);
  QFont bold = font();
  bold.setBold(true);
  p.setFont(bold);
  p.setPen(ink);
  double peak = 0;
  for (const Bar& b : bars_) peak = std::max(peak, b.total());
  const QRectF captionRect(kMargin, kMargin, size.width() - 2 * kMargin, kCaptionHeight);
  p.drawText(
      captionRect, Qt::AlignLeft | Qt::AlignVCenter,
      QFontMetricsF(bold).elidedText(tr("%1 · fullest device %2 of %3 (%4%)")
                                         .arg(title_, formatBytes(peak), formatBytes(capacity_))
                                         .arg(capacity_ > 0 ? qRound(100 * peak / capacity_) : 0),
                                     Qt::ElideRight, captionRect.width()));
  p.setFont(font());
  const QFontMetricsF fm(font());
  // Legend: the kinds (or "total"), measured bars' hatching, the capacity line.
  double x = kMargin;
  const double ly = kMargin + kCaptionHeight;
  const auto chip = [&](const QBrush& brush, const QColor& border, const QString& text) {
    const QRectF r(x, ly + 4, 14, 12);
    p.setPen(QPen(border, 1));
    p.setBrush(brush);
    p.drawRect(r);
    x += 18;
    p.setPen(ink);
    p.drawText(QRectF(x, ly, fm.horizontalAdvance(text) + 2, kLegendHeight),
               Qt::AlignLeft | Qt::AlignVCenter, text);
    x += fm.horizontalAdvance(text) + 14;
  };
  const bool totals = bars_.front().totalOnly;
  const bool narrow = size.width() < 760;
  if (totals) {
    chip(kTotalColor, kTotalColor.darker(140), tr("all kinds (this plan has no breakdown)"));
  } else {
    // Narrow charts (the run and compare views) name the kinds briefly.
    const QStringList brief{tr("weights"), tr("gradients"),   tr("optimizer"),
                            tr("experts"), tr("activations"), tr("workspace")};
    const bool experts = hasExperts();
    for (int k = 0; k < kKinds; ++k)
      if (k != Experts || experts)
        chip(memoryKindColors()[size_t(k)], memoryKindColors()[size_t(k)].darker(140),
             narrow ? brief[k] : kindName(k));
  }
  if (hasMeasured())
    chip(QBrush(ink, Qt::BDiagPattern), ink, narrow ? tr("measured") : tr("measured (right bar)"));
  p.setPen(QPen(QColor(0xd3, 0x2f, 0x2f), 2, Qt::DashLine));
  p.drawLine(QPointF(x, ly + 10), QPointF(x + 22, ly + 10));
  x += 26;
  p.setPen(ink);
  p.drawText(QRectF(x, ly, 400, kLegendHeight), Qt::AlignLeft | Qt::AlignVCenter,
             (capacity_ > g.top ? (narrow ? tr("capacity %1 (off scale)")
                                          : tr("device capacity %1 (far above this scale)"))
                                : (narrow ? tr("capacity %1") : tr("device capacity %1")))
                 .arg(formatBytes(capacity_)));

  // Axis and grid.
  const auto [unit, unitName] = axisUnit(g.top);
  const double step = niceStep(g.top / unit, std::max(2, int(g.plot.height() / 50)));
  for (double v = 0; v * unit <= g.top; v += step) {
    const double y = g.plot.bottom() - v * unit / g.top * g.plot.height();
    p.setPen(grid);
    p.drawLine(QPointF(g.plot.left(), y), QPointF(g.plot.right(), y));
    p.setPen(ink);
    p.drawText(QRectF(kMargin, y - 8, kAxisWidth - 8, 16), Qt::AlignRight | Qt::AlignVCenter,
               QString::number(v, 'g', 4));
  }
  p.save();
  p.translate(kMargin + 6, g.plot.center().y());
  p.rotate(-90);
  p.drawText(QRectF(-60, -8, 120, 16), Qt::AlignCenter, unitName);
  p.restore();

  // Capacity, under the bars' totals (its value is in the legend).
  if (capacity_ > 0 && capacity_ <= g.top) {
    const double y = capacityY(size);
    p.setPen(QPen(QColor(0xd3, 0x2f, 0x2f), 2, Qt::DashLine));
    p.drawLine(QPointF(g.plot.left(), y), QPointF(g.plot.right(), y));
  }
  // Bars, bottom up; measured ones hatched over the kind's colour.
  const QList<std::array<QRectF, kKinds>> rects = segmentRects(size);
  for (qsizetype i = 0; i < rects.size(); ++i) {
    const Bar& b = bars_[i];
    for (int k = 0; k < kKinds; ++k) {
      const QRectF& r = rects[i][size_t(k)];
      if (r.height() <= 0) continue;
      const QColor c = b.totalOnly ? kTotalColor : memoryKindColors()[size_t(k)];
      p.fillRect(r, c);
      if (b.measured) p.fillRect(r, QBrush(QColor(255, 255, 255, 150), Qt::BDiagPattern));
      p.setPen(QPen(c.darker(150), 0.8));
      p.setBrush(Qt::NoBrush);
      p.drawRect(r);
    }
    // The total above the bar when there is room for it.
    const QRectF top = rects[i][kKinds - 1];
    const QString total = formatBytes(b.total());
    if (fm.horizontalAdvance(total) <= g.slot / (hasMeasured() ? 2 : 1) - 2) {
      // On white, so that a total near the capacity line stays legible.
      const double w = fm.horizontalAdvance(total) + 6;
      const QRectF label(top.center().x() - w / 2, top.top() - 16, w, 14);
      p.fillRect(label, Qt::white);
      p.setPen(ink);
      p.drawText(label, Qt::AlignHCenter | Qt::AlignBottom, total);
    }
  }
  // Rank labels.
  int group = -1, lastRank = -1;
  for (const Bar& b : bars_) {
    if (b.rank == lastRank) continue;
    ++group;
    lastRank = b.rank;
    const QRectF slot(g.plot.left() + group * g.slot, g.plot.bottom() + 2, g.slot, 16);
    p.setPen(ink);
    const QString name = totals ? tr("device %1").arg(b.rank) : tr("rank %1").arg(b.rank);
    if (fm.horizontalAdvance(name) < g.slot || group % 4 == 0)
      p.drawText(slot, Qt::AlignHCenter | Qt::AlignTop, name);
    const QString second = rankLabels_.value(b.rank);
    if (!second.isEmpty() && fm.horizontalAdvance(second) < g.slot)
      p.drawText(slot.translated(0, 15), Qt::AlignHCenter | Qt::AlignTop, second);
  }
  p.setPen(QPen(QColor(0x90, 0xa4, 0xae), 1));
  p.drawLine(g.plot.bottomLeft(), g.plot.bottomRight());
}

void MemoryBarsChart::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setRenderHint(QPainter::TextAntialiasing, true);
  paintChart(p, QSizeF(size()));
}

bool MemoryBarsChart::exportImage(const QString& path, QString* error) const {
  const QSizeF size(std::max(1200, width()), std::max(480, height()));
  return exportPicture(
      path, size, title_, [this](QPainter& p, QSizeF s) { paintChart(p, s); }, error);
}

void MemoryBarsChart::contextMenuEvent(QContextMenuEvent* event) {
  if (bars_.isEmpty()) return;
  QMenu menu(this);
  menu.addAction(tr("Export Memory Bars (PNG or SVG)…"), this, [this] {
    const QString path =
        QFileDialog::getSaveFileName(this, tr("Export Memory Bars"), QStringLiteral("memory.png"),
                                     tr("PNG image (*.png);;SVG drawing (*.svg)"));
    QString error;
    if (!path.isEmpty() && !exportImage(path, &error))
      QMessageBox::warning(this, tr("Export failed"), error);
  });
  menu.exec(event->globalPos());
}

}  // namespace unity::views
