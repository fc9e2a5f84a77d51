#include "picture_export.h"

#include <QCoreApplication>
#include <QFileInfo>
#include <QImage>
#include <QSvgGenerator>

namespace unity::views {

bool exportPicture(const QString& path, QSizeF size, const QString& title,
                   const std::function<void(QPainter&, QSizeF)>& paint, QString* error) {
  auto fail = [&] {
    if (error) *error = QCoreApplication::translate("unity::views", "Cannot write '%1'.").arg(path);
    return false;
  };
  if (QFileInfo(path).suffix().compare(QLatin1String("svg"), Qt::CaseInsensitive) == 0) {
    QSvgGenerator svg;
    svg.setFileName(path);
    svg.setSize(size.toSize());
    svg.setViewBox(QRectF(QPointF(0, 0), size));
    svg.setTitle(title);
    svg.setDescription(QCoreApplication::translate("unity::views", "Exported by Unity Explorer"));
    QPainter p;
    if (!p.begin(&svg)) return fail();
    paint(p, size);
    p.end();
    return QFileInfo::exists(path) || fail();
  }
  QImage image((size * 2).toSize(), QImage::Format_ARGB32_Premultiplied);
  image.fill(Qt::white);
  QPainter p(&image);
  p.scale(2, 2);
  p.setRenderHint(QPainter::TextAntialiasing, true);
  paint(p, size);
  p.end();
  return image.save(path, "PNG") || fail();
}

}  // namespace unity::views
