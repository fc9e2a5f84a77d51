#pragma once
// The colour key under the PCG and search views: what green, orange, grey and ×N mean.
#include <QLabel>

#include "category_colors.h"

namespace unity::views {

inline QString legendHtml() {
  // A square glyph in a shade between the node's fill and its border (rich text has no borders).
  const auto chip = [](const QColor& fill, const QColor& border, const QString& text) {
    const QColor shade =
        QColor::fromRgbF((fill.redF() + border.redF()) / 2, (fill.greenF() + border.greenF()) / 2,
                         (fill.blueF() + border.blueF()) / 2);
    return QStringLiteral("<span style='color:%1; font-size:large;'>&#9632;</span>&nbsp;%2")
        .arg(shade.name(), text);
  };
  return chip(categoryFill(OpCategory::Compute), categoryColor(OpCategory::Compute),
              QObject::tr("compute")) +
         QStringLiteral("&nbsp;&nbsp; ") +
         chip(categoryFill(OpCategory::Parallel), categoryColor(OpCategory::Parallel),
              QObject::tr("parallel")) +
         QStringLiteral("&nbsp;&nbsp; ") +
         chip(categoryFill(OpCategory::Source), categoryColor(OpCategory::Source),
              QObject::tr("weight / input / constant")) +
         QObject::tr(
             "&nbsp;&nbsp; <b>×N</b> runs as N tasks &nbsp;&nbsp; edges: [size/degree] r = "
             "replicas");
}

inline QLabel* makeLegend(QWidget* parent) {
  auto* label = new QLabel(legendHtml(), parent);
  label->setTextFormat(Qt::RichText);
  label->setObjectName(QStringLiteral("legend"));
  label->setStyleSheet(QStringLiteral("color: #37474f; padding: 2px 4px;"));
  return label;
}

}  // namespace unity::views
