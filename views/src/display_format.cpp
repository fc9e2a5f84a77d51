#include "unity/views/display_format.h"

#include <QStringList>

#include <algorithm>
#include <cmath>

namespace unity::views {

QString formatMs(double ms) {
  if (!std::isfinite(ms)) return QStringLiteral("∞");
  if (ms >= 1000) return QStringLiteral("%1 s").arg(ms / 1000, 0, 'f', 2);
  if (ms >= 100) return QStringLiteral("%1 ms").arg(ms, 0, 'f', 1);
  if (ms >= 1) return QStringLiteral("%1 ms").arg(ms, 0, 'f', 2);
  if (ms >= 0.001) return QStringLiteral("%1 ms").arg(ms, 0, 'f', 3);
  if (ms > 0) return QStringLiteral("%1 µs").arg(ms * 1000, 0, 'f', 3);
  return QStringLiteral("0 ms");
}

QString formatBytes(double bytes) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (std::abs(bytes) >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  if (u == 0) return QStringLiteral("%1 B").arg(qint64(std::llround(bytes)));
  return QStringLiteral("%1 %2")
      .arg(bytes, 0, 'f', bytes >= 100 ? 0 : (bytes >= 10 ? 1 : 2))
      .arg(QLatin1String(units[u]));
}

QString formatBandwidth(double bps) {
  const double gb = bps / 1e9;
  if (gb >= 10) return QStringLiteral("%1 GB/s").arg(gb, 0, 'f', 0);
  if (gb >= 1) return QStringLiteral("%1 GB/s").arg(gb, 0, 'f', 1);
  return QStringLiteral("%1 MB/s").arg(bps / 1e6, 0, 'f', 0);
}

QString formatShape(const ParallelTensorShape& shape) {
  QString s = QStringLiteral("[");
  for (int i = 0; i < shape.rank(); ++i) {
    if (i) s += QStringLiteral(", ");
    s += QString::number(shape.dims[size_t(i)].size);
    if (shape.dims[size_t(i)].degree > 1)
      s += QStringLiteral("/%1").arg(shape.dims[size_t(i)].degree);
  }
  s += QLatin1Char(']');
  if (shape.replica > 1) s += QStringLiteral(" r%1").arg(shape.replica);
  if (shape.dtype != DataType::Float32) {
    const auto name = to_string(shape.dtype);
    s += QLatin1Char(' ') + QString::fromLatin1(name.data(), qsizetype(name.size()));
  }
  return s;
}

QString formatDevices(std::vector<int> devices) {
  std::sort(devices.begin(), devices.end());
  devices.erase(std::unique(devices.begin(), devices.end()), devices.end());
  QStringList parts;
  for (size_t i = 0; i < devices.size();) {
    size_t j = i;
    while (j + 1 < devices.size() && devices[j + 1] == devices[j] + 1) ++j;
    if (j - i >= 2)
      parts << QStringLiteral("%1–%2").arg(devices[i]).arg(devices[j]);
    else
      for (size_t k = i; k <= j; ++k) parts << QString::number(devices[k]);
    i = j + 1;
  }
  return parts.join(QStringLiteral(", "));
}

}  // namespace unity::views
