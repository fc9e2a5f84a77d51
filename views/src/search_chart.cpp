#include "search_chart.h"

#include <QChart>
#include <QLineSeries>
#include <QScatterSeries>
#include <QValueAxis>

#include <algorithm>
#include <cmath>

#include "category_colors.h"

namespace unity::views {

SearchChart::SearchChart(QWidget* parent)
    : QChartView(parent),
      best_(new QLineSeries),
      candidates_(new QScatterSeries),
      x_(new QValueAxis),
      y_(new QValueAxis) {
  auto* chart = new QChart;
  chart->setTitle(tr("Predicted iteration time"));
  chart->legend()->setAlignment(Qt::AlignBottom);
  chart->setMargins(QMargins(4, 4, 4, 4));
  candidates_->setName(tr("candidate"));
  candidates_->setMarkerSize(6);
  candidates_->setColor(QColor(0x90, 0xa4, 0xae));
  candidates_->setBorderColor(QColor(0x90, 0xa4, 0xae));
  best_->setName(tr("best so far"));
  QPen pen(newBestColor());
  pen.setWidthF(2.5);
  best_->setPen(pen);
  chart->addSeries(candidates_);
  chart->addSeries(best_);
  x_->setTitleText(tr("seconds"));
  y_->setTitleText(tr("ms per iteration"));
  x_->setLabelFormat(QStringLiteral("%.1f"));
  y_->setLabelFormat(QStringLiteral("%.3g"));
  chart->addAxis(x_, Qt::AlignBottom);
  chart->addAxis(y_, Qt::AlignLeft);
  for (QAbstractSeries* s : chart->series()) {
    s->attachAxis(x_);
    s->attachAxis(y_);
  }
  setChart(chart);
  setRenderHint(QPainter::Antialiasing);
  setMinimumHeight(200);
  redraw_.setSingleShot(true);
  redraw_.setInterval(kRedrawMs);
  connect(&redraw_, &QTimer::timeout, this, &SearchChart::flush);
  reset(0);
}

void SearchChart::reset(double startMs) {
  if (!std::isfinite(startMs)) startMs = 0;  // an infeasible start has no point on the chart
  best_->clear();
  candidates_->clear();
  dots_.clear();
  pendingDots_.clear();
  total_ = 0;
  segment_ = -1;
  split_ = false;
  chart()->setTitle(tr("Predicted iteration time"));
  y_->setTitleText(tr("ms per iteration"));
  redraw_.stop();
  bestMs_ = startMs;
  minMs_ = maxMs_ = startMs;
  maxT_ = 0;
  if (startMs > 0) best_->append(0, startMs);
  rescale();
}

void SearchChart::extendBest(double elapsed, double ms) {
  if (best_->count() > 0) best_->append(elapsed, bestMs_);  // a step: flat until the improvement
  best_->append(elapsed, ms);
  bestMs_ = ms;
}

void SearchChart::addCandidates(const QList<CandidatePoint>& points) {
  for (const CandidatePoint& p : points) {
    if (!std::isfinite(p.ms)) continue;
    if (p.repeat) {  // already drawn: only the best line moves
      if (p.newBest && (bestMs_ <= 0 || p.ms < bestMs_)) extendBest(p.elapsed, p.ms);
      continue;
    }
    ++total_;
    pendingDots_.append(QPointF(p.elapsed, p.ms));
    if (p.segment >= 0 && !split_) {
      // A split graph is searched piece by piece: the values are the pieces' times, and the best
      // line restarts with each piece.
      split_ = true;
      chart()->setTitle(tr("Predicted time of each piece of the split graph"));
      y_->setTitleText(tr("ms per piece"));
      best_->clear();
      minMs_ = maxMs_ = p.ms;
    }
    if (p.segment != segment_) {
      segment_ = p.segment;
      if (split_) {
        if (best_->count() > 0) best_->append(p.elapsed, bestMs_);
        best_->append(p.elapsed, p.ms);
        bestMs_ = p.ms;
      }
    }
    minMs_ = minMs_ > 0 ? std::min(minMs_, p.ms) : p.ms;
    maxMs_ = std::max(maxMs_, p.ms);
    maxT_ = std::max(maxT_, p.elapsed);
    if (p.newBest && (bestMs_ <= 0 || p.ms < bestMs_)) extendBest(p.elapsed, p.ms);
  }
  if (!redraw_.isActive()) redraw_.start();
}

void SearchChart::flush() {
  redraw_.stop();
  if (pendingDots_.isEmpty()) return;
  dots_ += pendingDots_;
  pendingDots_.clear();
  if (dots_.size() > kMaxDots) {
    // Keep every other dot; the chart shows the shape of the search, not each candidate.
    QList<QPointF> thinned;
    thinned.reserve(dots_.size() / 2 + 1);
    for (qsizetype i = 0; i < dots_.size(); i += 2) thinned.append(dots_[i]);
    dots_ = std::move(thinned);
  }
  candidates_->replace(dots_);
  rescale();
}

int SearchChart::drawnCandidateCount() const { return int(candidates_->count()); }

void SearchChart::finish(double elapsed, double bestMs) {
  flush();
  if (!std::isfinite(bestMs)) bestMs = bestMs_;
  maxT_ = std::max(maxT_, elapsed);
  if (split_) {  // the whole plan's time is on another scale than its pieces': the stats show it
    if (best_->count() > 0) best_->append(elapsed, bestMs_);
    rescale();
    return;
  }
  if (bestMs > 0 && (bestMs_ <= 0 || bestMs < bestMs_))
    extendBest(elapsed, bestMs);
  else if (best_->count() > 0)
    best_->append(elapsed, bestMs_);
  minMs_ = minMs_ > 0 ? std::min(minMs_, bestMs) : bestMs;
  rescale();
}

int SearchChart::bestPointCount() const { return int(best_->count()); }

void SearchChart::rescale() {
  if (!std::isfinite(minMs_) || !std::isfinite(maxMs_) || !std::isfinite(bestMs_)) return;
  const double span = std::max(maxT_ * 1.05, 0.01);
  x_->setRange(0, span);
  x_->setLabelFormat(span < 0.1 ? QStringLiteral("%.3f")
                     : span < 2 ? QStringLiteral("%.2f")
                                : QStringLiteral("%.1f"));
  // Candidates that do not fit or are far worse would flatten the interesting part: cap the view at
  // three times the best (pieces of a split graph differ in size: show them all).
  const double top = split_ ? maxMs_ : std::min(maxMs_, 3 * std::max(bestMs_, minMs_));
  const double lo = minMs_, hi = std::max(top, lo * 1.01 + 1e-9);
  const double pad = (hi - lo) * 0.08 + 1e-9;
  y_->setRange(std::max(0.0, lo - pad), hi + pad);
}

}  // namespace unity::views
