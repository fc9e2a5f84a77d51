#include "unity/views/pipeline_timeline_chart.h"

#include <QContextMenuEvent>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QMenu>
#include <QMessageBox>
#include <QPainter>

#include <algorithm>
#include <cmath>

#include "axis_step.h"
#include "picture_export.h"
#include "pipeline_colors.h"
#include "unity/core/json_io.h"
#include "unity/views/display_format.h"

namespace unity::views {

namespace {
constexpr double kCaptionHeight = 22;
constexpr double kAxisHeight = 30;
constexpr double kChartMargin = 8;
constexpr double kMinRow = 10;
constexpr double kMaxRow = 110;
constexpr double kStatsWidth = 170;  // per row: forward, backward and idle time, right of the plot
constexpr double kNarrow = 900;      // narrower pictures (the compare view's halves): fewer words

// The communication lane: light where compute hides it, strong where the stage waits for it (a
// purple apart from the passes' blue and orange), and the optimizer step in blue-grey.
const QColor kCommHidden(0xe1, 0xbe, 0xe7);
const QColor kCommExposed(0x7b, 0x1f, 0xa2);
const QColor kOptimizerStep(0x54, 0x6e, 0x7a);
// The expert all-to-alls in green (dispatch, and combine a shade darker), the context-parallel
// K/V exchange in brown: what an MoE or long-sequence plan pays stands apart from the rest.
const QColor kDispatchExposed(0x00, 0x89, 0x7b);
const QColor kDispatchHidden(0xb2, 0xdf, 0xdb);
const QColor kCombineExposed(0x00, 0x5b, 0x4f);
const QColor kCombineHidden(0x80, 0xcb, 0xc4);
const QColor kExchangeExposed(0x8d, 0x6e, 0x63);
const QColor kExchangeHidden(0xd7, 0xcc, 0xc8);
constexpr double kLaneShare = 0.34;  // of a stage's band, under its compute row

bool isAlltoall(const CommBox& c) { return c.kind == kCommDispatch || c.kind == kCommCombine; }

QColor commColor(const CommBox& c) {
  if (c.kind == kCommOptimizerStep) return kOptimizerStep;
  if (c.kind == kCommDispatch) return c.exposed ? kDispatchExposed : kDispatchHidden;
  if (c.kind == kCommCombine) return c.exposed ? kCombineExposed : kCombineHidden;
  if (c.kind == kCommContextExchange) return c.exposed ? kExchangeExposed : kExchangeHidden;
  return c.exposed ? kCommExposed : kCommHidden;
}

QString commLabel(const CommBox& c) {
  if (c.kind == kCommGradientSync) return QObject::tr("grad sync");
  if (c.kind == kCommOptimizerStep) return QObject::tr("optimizer");
  return QString::fromStdString(c.kind);
}

// Which kinds of communication a timeline has, for its colour key.
struct CommKinds {
  bool alltoall = false, exchange = false;
};
CommKinds commKinds(const PipelineTimeline& t) {
  CommKinds k;
  for (const CommBox& c : t.comm) {
    k.alltoall = k.alltoall || isAlltoall(c);
    k.exchange = k.exchange || c.kind == kCommContextExchange;
  }
  return k;
}

QString tickText(double ms, double step) {
  const int decimals = step >= 1 ? 0 : int(std::ceil(-std::log10(step)));
  return QString::number(ms, 'f', std::clamp(decimals, 0, 4));
}
}  // namespace

PipelineTimelineChart::PipelineTimelineChart(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("pipelineTimeline"));
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
  message_ = tr("No pipeline timeline");
}

QSize PipelineTimelineChart::sizeHint() const { return {900, 260}; }
QSize PipelineTimelineChart::minimumSizeHint() const { return {300, 120}; }

void PipelineTimelineChart::setTimeline(const PipelineTimeline& timeline, const QString& title) {
  timeline_ = timeline;
  title_ = title;
  message_.clear();
  has_ = true;
  update();
}

void PipelineTimelineChart::clear(const QString& message) {
  timeline_ = PipelineTimeline();
  has_ = false;
  message_ = message;
  update();
}

void PipelineTimelineChart::setTimeScale(double seconds) {
  scale_ = std::max(0.0, seconds);
  update();
}

double PipelineTimelineChart::timeScale() const {
  return scale_ > 0 ? scale_ : std::max(timeline_.end(), 1e-12);
}

QString PipelineTimelineChart::predictedTitle(double iteration_seconds) {
  return tr("Predicted · plan %1").arg(formatMs(iteration_seconds * 1e3));
}

QString PipelineTimelineChart::caption() const {
  if (!has_) return message_;
  const PipelineTimeline& t = timeline_;
  QString shape = tr("%1 stages × %2 micro-batches").arg(t.stages).arg(t.micro_batches);
  if (t.interleave > 1) shape += tr(" × %1 chunks").arg(t.interleave);
  // A predicted timeline is the schedule simulated pass by pass; its end is named as such.
  const QString iteration =
      t.end() > t.makespan
          ? (t.measured ? tr("iteration %1 · ") : tr("schedule %1 · ")).arg(formatMs(t.end() * 1e3))
          : QString();
  return tr("%1 · %2makespan %3 · bubble %4% · %5")
      .arg(title_, iteration, formatMs(t.makespan * 1e3))
      .arg(t.bubble_fraction * 100, 0, 'f', 1)
      .arg(shape);
}

QString PipelineTimelineChart::rowLabel(int rank, bool brief) const {
  if (brief) return tr("stage %1").arg(rank);
  const auto& labels = timeline_.stage_labels;
  const QString label =
      rank < int(labels.size()) ? QString::fromStdString(labels[size_t(rank)]) : QString();
  if (label.isEmpty()) return tr("stage %1").arg(rank);
  // Interleaved stages own several layer ranges: the first two say the pattern.
  const QStringList chunks = label.split(QStringLiteral(", layers "));
  if (chunks.size() > 2)
    return tr("stage %1 · %2, %3, … (%4 chunks)")
        .arg(rank)
        .arg(chunks[0], chunks[1])
        .arg(chunks.size());
  // "layers 3-3" reads better as "layer 3".
  const QStringList range = label.section(QLatin1Char(' '), 1).split(QLatin1Char('-'));
  if (label.startsWith(QLatin1String("layers ")) && range.size() == 2 && range[0] == range[1])
    return tr("stage %1 · layer %2").arg(rank).arg(range[0]);
  return tr("stage %1 · %2").arg(rank).arg(label);
}

QString PipelineTimelineChart::captionText(const QSizeF& size) const {
  if (size.width() >= kNarrow) return caption();
  return tr("%1 · makespan %2 · bubble %3%")
      .arg(title_, formatMs(timeline_.makespan * 1e3))
      .arg(timeline_.bubble_fraction * 100, 0, 'f', 1);
}

double PipelineTimelineChart::keyWidth() const {
  const QFontMetricsF fm(font());
  double w = fm.horizontalAdvance(tr("idle (bubble)") + tr("backward") + tr("forward")) + 3 * 32;
  if (!timeline_.comm.empty())
    w += fm.horizontalAdvance(tr("comm (exposed)") + tr("comm (hidden)") + tr("optimizer step")) +
         3 * 32;
  const CommKinds kinds = commKinds(timeline_);
  if (kinds.alltoall)
    w += fm.horizontalAdvance(tr("all-to-all (exposed)") + tr("all-to-all (hidden)")) + 2 * 32;
  if (kinds.exchange) w += fm.horizontalAdvance(tr("K/V exchange")) + 32;
  return w;
}

bool PipelineTimelineChart::keyOnOwnLine(const QSizeF& size) const {
  // The communication lanes' colours need saying: under the caption when it leaves no room.
  if (timeline_.comm.empty()) return false;
  QFont bold = font();
  bold.setBold(true);
  const double caption = QFontMetricsF(bold).horizontalAdvance(captionText(size));
  return caption + 16 + keyWidth() > size.width() - 2 * kChartMargin;
}

PipelineTimelineChart::Geometry PipelineTimelineChart::geometry(const QSizeF& size) const {
  Geometry g;
  double labelWidth = 60;
  const QFontMetricsF fm(font());
  const bool narrow = size.width() < kNarrow;
  for (int r = 0; r < timeline_.stages; ++r)
    labelWidth = std::max(labelWidth, fm.horizontalAdvance(rowLabel(r, narrow)) + 12);
  labelWidth = std::min(labelWidth, size.width() / 3);
  const double top = kChartMargin + kCaptionHeight * (keyOnOwnLine(size) ? 2 : 1) + 4;
  const double available = size.height() - top - kAxisHeight;
  const int rows = std::max(1, timeline_.stages);
  const bool lanes = !timeline_.comm.empty();
  g.rowHeight = std::clamp(available / rows, lanes ? 1.5 * kMinRow : kMinRow, kMaxRow);
  g.computeHeight = lanes ? g.rowHeight * (1 - kLaneShare) : g.rowHeight;
  g.plot = QRectF(
      kChartMargin + labelWidth, top,
      std::max(10.0, size.width() - labelWidth - (narrow ? 0 : kStatsWidth) - 3 * kChartMargin),
      g.rowHeight * rows);
  g.secondsToPixels = g.plot.width() / timeScale();
  return g;
}

QList<QRectF> PipelineTimelineChart::rowRects(const QSizeF& size) const {
  QList<QRectF> out;
  if (!has_) return out;
  const Geometry g = geometry(size);
  for (int r = 0; r < timeline_.stages; ++r)
    out.append(QRectF(g.plot.left(), g.plot.top() + r * g.rowHeight, g.plot.width(), g.rowHeight));
  return out;
}

QRectF PipelineTimelineChart::laneRect(const QSizeF& size, int rank) const {
  if (!has_ || timeline_.comm.empty()) return {};
  const Geometry g = geometry(size);
  const double top = g.plot.top() + rank * g.rowHeight + g.computeHeight;
  return QRectF(g.plot.left(), top, g.plot.width(), g.rowHeight - g.computeHeight);
}

QList<QRectF> PipelineTimelineChart::commRects(const QSizeF& size) const {
  QList<QRectF> out;
  if (!has_) return out;
  const Geometry g = geometry(size);
  out.reserve(qsizetype(timeline_.comm.size()));
  for (const CommBox& c : timeline_.comm) {
    const double x0 = g.plot.left() + c.start * g.secondsToPixels;
    const double x1 = g.plot.left() + c.end * g.secondsToPixels;
    const double y = g.plot.top() + c.rank * g.rowHeight + g.computeHeight;
    out.append(QRectF(x0, y + 0.5, std::max(0.5, x1 - x0), g.rowHeight - g.computeHeight - 2));
  }
  return out;
}

QList<QRectF> PipelineTimelineChart::boxRects(const QSizeF& size) const {
  QList<QRectF> out;
  if (!has_) return out;
  const Geometry g = geometry(size);
  out.reserve(qsizetype(timeline_.boxes.size()));
  for (const TimelineBox& b : timeline_.boxes) {
    const double x0 = g.plot.left() + b.start * g.secondsToPixels;
    const double x1 = g.plot.left() + b.end * g.secondsToPixels;
    const double y = g.plot.top() + b.rank * g.rowHeight;
    out.append(QRectF(x0, y + 1.5, std::max(0.5, x1 - x0), g.computeHeight - 3));
  }
  return out;
}

void PipelineTimelineChart::paintChart(QPainter& p, const QSizeF& size) const {
  p.fillRect(QRectF(QPointF(0, 0), size), Qt::white);
  const QColor ink(0x26, 0x32, 0x38);
  QFont bold = font();
  bold.setBold(true);
  if (!has_) {
    p.setPen(QColor(0x60, 0x7d, 0x8b));
    p.drawText(QRectF(QPointF(0, 0), size), Qt::AlignCenter | Qt::TextWordWrap, message_);
    return;
  }
  const Geometry g = geometry(size);
  // Caption, with the colour key on the right.
  p.setFont(bold);
  p.setPen(ink);
  const QRectF captionRect(kChartMargin, kChartMargin, size.width() - 2 * kChartMargin,
                           kCaptionHeight);
  const bool narrow = size.width() < kNarrow;
  const QString caption = captionText(size);
  p.drawText(captionRect, Qt::AlignLeft | Qt::AlignVCenter, caption);
  const double captionWidth = QFontMetricsF(bold).horizontalAdvance(caption);
  p.setFont(font());
  const QFontMetricsF fm(font());
  const bool ownLine = keyOnOwnLine(size);
  const QRectF keyRect = captionRect.translated(0, ownLine ? kCaptionHeight : 0);
  double x = keyRect.right();
  const auto key = [&](const QColor& fill, const QBrush& brush, const QString& text) {
    x -= fm.horizontalAdvance(text);
    p.setPen(ink);
    p.drawText(QRectF(x, keyRect.top(), fm.horizontalAdvance(text) + 2, kCaptionHeight),
               Qt::AlignLeft | Qt::AlignVCenter, text);
    x -= 18;
    const QRectF chip(x, keyRect.center().y() - 6, 14, 12);
    p.fillRect(chip, Qt::white);
    p.setPen(QPen(fill.darker(150), 1));
    p.setBrush(brush);
    p.drawRect(chip);
    x -= 14;
  };
  // The colour key, where the caption leaves room for it.
  const bool lanes = !timeline_.comm.empty();
  if ((ownLine ? keyRect.left() : keyRect.left() + captionWidth + 16) + keyWidth() <=
      keyRect.right()) {
    if (lanes) {
      const CommKinds kinds = commKinds(timeline_);
      key(kOptimizerStep, kOptimizerStep, tr("optimizer step"));
      if (kinds.exchange) key(kExchangeExposed, kExchangeExposed, tr("K/V exchange"));
      if (kinds.alltoall) {
        key(kDispatchExposed, kDispatchExposed, tr("all-to-all (exposed)"));
        key(kDispatchHidden, kDispatchHidden, tr("all-to-all (hidden)"));
      }
      key(kCommExposed, kCommExposed, tr("comm (exposed)"));
      key(kCommHidden, kCommHidden, tr("comm (hidden)"));
    }
    key(QColor(0xb0, 0xbe, 0xc5), QBrush(QColor(0xb0, 0xbe, 0xc5), Qt::BDiagPattern),
        tr("idle (bubble)"));
    key(backwardColor(0), backwardColor(0), tr("backward"));
    key(forwardColor(0), forwardColor(0), tr("forward"));
  }

  // Rows: hatched, so that every gap between boxes (the bubble) shows as empty time.
  for (int r = 0; r < timeline_.stages; ++r) {
    const QRectF row(g.plot.left(), g.plot.top() + r * g.rowHeight, g.plot.width(), g.rowHeight);
    p.fillRect(row, r % 2 ? QColor(0xfa, 0xfa, 0xfa) : QColor(0xf3, 0xf5, 0xf6));
    const double end =
        std::min(row.right(), g.plot.left() + timeline_.makespan * g.secondsToPixels);
    p.fillRect(QRectF(row.left(), row.top(), end - row.left(), g.computeHeight),
               QBrush(QColor(0xcf, 0xd8, 0xdc), Qt::BDiagPattern));
    if (lanes) {  // the lane: plain, a hairline apart from the compute row
      const QRectF lane(row.left(), row.top() + g.computeHeight, row.width(),
                        g.rowHeight - g.computeHeight);
      p.fillRect(lane, QColor(0xff, 0xff, 0xff));
      p.setPen(QPen(QColor(0xe0, 0xe4, 0xe6), 1));
      p.drawLine(lane.topLeft(), lane.topRight());
    }
    p.setPen(ink);
    const double labelWidth = g.plot.left() - kChartMargin - 6;
    p.drawText(QRectF(kChartMargin, row.top(), labelWidth, row.height()),
               Qt::AlignRight | Qt::AlignVCenter,
               fm.elidedText(rowLabel(r, narrow), Qt::ElideMiddle, labelWidth));
    // Where this stage's time goes: forward, backward, waiting for its communication, or waiting
    // for the other stages (its share of the bubble).
    double forward = 0, backward = 0, waitP2p = 0, waitSync = 0, waitAlltoall = 0;
    for (const TimelineBox& b : timeline_.boxes)
      if (b.rank == r) (b.backward ? backward : forward) += b.end - b.start;
    for (const CommBox& c : timeline_.comm)
      if (c.rank == r && c.exposed && c.kind != kCommOptimizerStep) {
        (c.end <= timeline_.makespan + 1e-12 ? waitP2p : waitSync) += c.end - c.start;
        if (isAlltoall(c)) waitAlltoall += c.end - c.start;
      }
    const double idle = std::max(0.0, timeline_.makespan - forward - backward - waitP2p);
    const QString idleText =
        tr("idle %1 (%2%)")
            .arg(formatMs(idle * 1e3))
            .arg(timeline_.makespan > 0 ? qRound(100 * idle / timeline_.makespan) : 0);
    QString workText = tr("fwd %1 · bwd %2").arg(formatMs(forward * 1e3), formatMs(backward * 1e3));
    if (lanes) workText += tr("\ncomm exposed %1").arg(formatMs((waitP2p + waitSync) * 1e3));
    const bool alltoalls = waitAlltoall > 0;
    if (alltoalls) workText += tr("\nof it all-to-all %1").arg(formatMs(waitAlltoall * 1e3));
    const QRectF stats(g.plot.right() + 8, row.top(), kStatsWidth, row.height());
    if (narrow) {
      // no room: the caption's bubble says it
    } else if (row.height() >= ((lanes ? 3 : 2) + (alltoalls ? 1 : 0)) * fm.height() + 2) {
      p.drawText(stats, Qt::AlignLeft | Qt::AlignVCenter, workText + QLatin1Char('\n') + idleText);
    } else {
      p.drawText(stats, Qt::AlignLeft | Qt::AlignVCenter, idleText);
    }
  }
  // Boxes: a thin border only when they are wide enough for it to leave colour inside.
  QFont small = font();
  small.setPixelSize(std::clamp(int(g.rowHeight * 0.45), 8, 12));
  p.setFont(small);
  const QFontMetricsF sfm(small);
  const QList<QRectF> rects = boxRects(size);
  for (qsizetype i = 0; i < rects.size(); ++i) {
    const TimelineBox& b = timeline_.boxes[size_t(i)];
    const int ownChunk = timeline_.stages > 0 ? b.chunk / timeline_.stages : 0;
    const QColor fill = b.backward ? backwardColor(ownChunk) : forwardColor(ownChunk);
    const QRectF& r = rects[i];
    if (r.width() >= 7) {
      p.setPen(QPen(fill.darker(160), 0.8));
      p.setBrush(fill);
      p.drawRect(r);
    } else {
      p.fillRect(r, fill);
    }
    const QString number = QString::number(b.micro_batch + 1);
    if (r.width() >= sfm.horizontalAdvance(number) + 4 && r.height() >= sfm.height()) {
      p.setPen(b.backward ? ink : Qt::white);
      p.drawText(r, Qt::AlignCenter, number);
    }
  }
  // The communication lanes: hidden parts first, so that the exposed ones stay on top.
  const QList<QRectF> comms = commRects(size);
  QFont tiny = font();
  tiny.setPixelSize(std::clamp(int((g.rowHeight - g.computeHeight) * 0.7), 7, 11));
  p.setFont(tiny);
  const QFontMetricsF tfm(tiny);
  p.save();
  p.setClipRect(g.plot.adjusted(0, 0, 1, 0));  // a scale shorter than the iteration cuts it
  for (int pass = 0; pass < 2; ++pass)
    for (qsizetype i = 0; i < comms.size(); ++i) {
      const CommBox& c = timeline_.comm[size_t(i)];
      if (c.exposed != (pass == 1)) continue;
      const QColor fill = commColor(c);
      p.fillRect(comms[i], fill);
      const QString label = commLabel(c);
      if (c.kind != kCommP2p && comms[i].width() >= tfm.horizontalAdvance(label) + 4 &&
          comms[i].height() >= tfm.height() - 2) {
        p.setPen(c.exposed ? Qt::white : ink);
        p.drawText(comms[i], Qt::AlignCenter, label);
      }
    }
  p.restore();
  p.setFont(font());
  // Frame and the time axis in ms.
  p.setPen(QPen(QColor(0x90, 0xa4, 0xae), 1));
  p.setBrush(Qt::NoBrush);
  p.drawRect(g.plot);
  const double spanMs = timeScale() * 1e3;
  const double step = niceStep(spanMs, std::max(2, int(g.plot.width() / 90)));
  for (double t = 0; t <= spanMs * 1.0001; t += step) {
    const double tx = g.plot.left() + t / 1e3 * g.secondsToPixels;
    p.setPen(QPen(QColor(0x90, 0xa4, 0xae), 1));
    p.drawLine(QPointF(tx, g.plot.bottom()), QPointF(tx, g.plot.bottom() + 4));
    p.setPen(ink);
    p.drawText(QRectF(tx - 40, g.plot.bottom() + 4, 80, 14), Qt::AlignHCenter | Qt::AlignTop,
               tickText(t, step));
  }
  p.drawText(QRectF(g.plot.left(), g.plot.bottom() + 16, g.plot.width(), 14),
             Qt::AlignHCenter | Qt::AlignTop,
             lanes ? tr("time in the iteration (ms); numbers: micro-batch; under each stage: its "
                        "communication")
                   : tr("time in the iteration (ms); numbers: micro-batch"));
  // The flush, where the gradient synchronisation and the optimizer step follow it.
  const double iteration = timeline_.end();
  if (iteration > timeline_.makespan * 1.001) {
    const double mx = g.plot.left() + timeline_.makespan * g.secondsToPixels;
    p.setPen(QPen(QColor(0x78, 0x90, 0x9c), 1, Qt::DotLine));
    p.drawLine(QPointF(mx, g.plot.top()), QPointF(mx, g.plot.bottom()));
  }
  // The iteration's end, when another chart's scale leaves room after it.
  if (scale_ > iteration * 1.001) {
    const double mx = g.plot.left() + iteration * g.secondsToPixels;
    p.setPen(QPen(QColor(0xd3, 0x2f, 0x2f), 1.2, Qt::DashLine));
    p.drawLine(QPointF(mx, g.plot.top()), QPointF(mx, g.plot.bottom()));
  }
}

void PipelineTimelineChart::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing, false);
  p.setRenderHint(QPainter::TextAntialiasing, true);
  paintChart(p, QSizeF(size()));
}

bool PipelineTimelineChart::exportImage(const QString& path, QString* error) const {
  if (!has_) {
    if (error) *error = tr("There is no timeline to export.");
    return false;
  }
  // At least 1600 px wide: a 1F1B schedule of 32 micro-batches needs the width to read.
  const QSizeF size(std::max(1600, width()), std::max(360, height()));
  return exportPicture(
      path, size, title_, [this](QPainter& p, QSizeF s) { paintChart(p, s); }, error);
}

bool PipelineTimelineChart::exportChromeTrace(const QString& path, QString* error) const {
  if (!has_) {
    if (error) *error = tr("There is no timeline to export.");
    return false;
  }
  try {
    const nlohmann::json trace = chrome_trace(timeline_, title_.toStdString());
    write_text_file_atomic(QFile::encodeName(path).toStdString(), trace.dump() + "\n");
  } catch (const std::exception& e) {
    if (error) *error = QString::fromUtf8(e.what());
    return false;
  }
  return true;
}

void PipelineTimelineChart::exportWithDialog() {
  if (!has_) return;
  QString filter;
  const QString path = QFileDialog::getSaveFileName(
      this, tr("Export Timeline"), QStringLiteral("timeline.png"),
      tr("PNG image (*.png);;SVG drawing (*.svg);;Chrome trace (*.json)"), &filter);
  if (path.isEmpty()) return;
  QString error;
  const bool trace =
      QFileInfo(path).suffix().compare(QLatin1String("json"), Qt::CaseInsensitive) == 0;
  const bool ok = trace ? exportChromeTrace(path, &error) : exportImage(path, &error);
  if (!ok) QMessageBox::warning(this, tr("Export failed"), error);
}

void PipelineTimelineChart::contextMenuEvent(QContextMenuEvent* event) {
  if (!has_) return;
  QMenu menu(this);
  menu.addAction(tr("Export Timeline (PNG, SVG or Chrome Trace)…"), this,
                 &PipelineTimelineChart::exportWithDialog);
  menu.exec(event->globalPos());
}

}  // namespace unity::views
