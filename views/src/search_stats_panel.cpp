#include "search_stats_panel.h"

#include <QFontMetrics>
#include <QPainter>

#include "unity/views/display_format.h"

namespace unity::views {

namespace {
constexpr int kRows = 3;
}

SearchStatsPanel::SearchStatsPanel(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("searchStats"));
  setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Fixed);
  setFixedHeight(sizeHint().height());
}

QSize SearchStatsPanel::sizeHint() const {
  const int line = fontMetrics().height() + 4;
  return {420, line * (kRows + 2) + 8};
}

void SearchStatsPanel::clear() {
  rows_.clear();
  current_.clear();
  update();
}

void SearchStatsPanel::setSnapshot(const SearchSnapshot& s) {
  const QString piece =
      s.segments > 0 ? tr(" (piece %1 of %2)").arg(s.segment + 1).arg(s.segments) : QString();
  QString best = s.status.isEmpty() && s.segments > 0
                     ? tr("%1 (this piece)").arg(formatMs(s.bestMs))
                     : formatMs(s.bestMs);
  if (s.status.isEmpty() && s.segments > 0 && s.planBestMs > 0)
    best += tr(" · best whole plan so far %1").arg(formatMs(s.planBestMs));
  rows_ = {
      {tr("Best"), tr("%1   (model before the search: %2)").arg(best, formatMs(s.startMs))},
      {tr("Candidates"), tr("%1 costed · %2 per second · queue %3")
                             .arg(s.candidates)
                             .arg(s.candidatesPerSecond, 0, 'f', 1)
                             .arg(s.queueSize)},
      {tr("Progress"), tr("%1step %2%3 · %4 s")
                           .arg(s.phase.isEmpty() ? QString() : s.phase + QStringLiteral(" · "))
                           .arg(s.step)
                           .arg(piece)
                           .arg(s.elapsed, 0, 'f', 1)}};
  current_ = s.rule.isEmpty() ? QString()
                              : tr("Current candidate: %1 at %2 → %3")
                                    .arg(s.rule, s.matchedNames.join(QStringLiteral(", ")),
                                         formatMs(s.candidateMs));
  update();
}

QString SearchStatsPanel::text() const {
  QStringList lines;
  for (const auto& [name, value] : rows_) lines << name + QStringLiteral(": ") + value;
  if (!current_.isEmpty()) lines << current_;
  return lines.join(QLatin1Char('\n'));
}

void SearchStatsPanel::paintEvent(QPaintEvent*) {
  QPainter p(this);
  const QFontMetrics fm = fontMetrics();
  const int line = fm.height() + 4;
  QFont bold = font();
  bold.setBold(true);
  int labelWidth = 0;
  for (const auto& [name, value] : rows_)
    labelWidth = std::max(labelWidth, fm.horizontalAdvance(name));
  int y = 4;
  for (const auto& [name, value] : rows_) {
    p.setFont(font());
    p.setPen(palette().color(QPalette::PlaceholderText));
    p.drawText(QRect(6, y, labelWidth, line), Qt::AlignLeft | Qt::AlignVCenter, name);
    p.setFont(name == rows_.front().first ? bold : font());
    p.setPen(palette().color(QPalette::Text));
    p.drawText(QRect(16 + labelWidth, y, width() - labelWidth - 20, line),
               Qt::AlignLeft | Qt::AlignVCenter, value);
    y += line;
  }
  if (!current_.isEmpty()) {
    p.setFont(font());
    p.setPen(QColor(0x8e, 0x24, 0xaa));
    const QString elided = fm.elidedText(current_, Qt::ElideRight, width() - 12);
    p.drawText(QRect(6, y + 4, width() - 12, 2 * line),
               Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap, elided);
  }
}

}  // namespace unity::views
