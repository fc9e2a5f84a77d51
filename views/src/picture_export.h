#pragma once
// Writing a chart as a picture: SVG (by the file's suffix) or PNG at twice the size, on white.
#include <functional>

#include <QPainter>
#include <QSizeF>
#include <QString>

namespace unity::views {

// Paints with `paint(painter, size)` into `path`; false with `error` set when it cannot be written.
bool exportPicture(const QString& path, QSizeF size, const QString& title,
                   const std::function<void(QPainter&, QSizeF)>& paint, QString* error);

}  // namespace unity::views
