#include "unity/views/graph_layout.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QStringList>

namespace unity::views {

namespace {

constexpr double kPointsPerInch = 72.0;

// Graphviz points have y growing upwards from the bottom of the bounding box.
struct Flip {
  double top = 0;
  QPointF operator()(double x, double y) const { return {x, top - y}; }
};

bool parsePoint(const QString& text, const Flip& flip, QPointF* out) {
  const QStringList xy = text.split(QLatin1Char(','));
  if (xy.size() < 2) return false;
  bool okX = false, okY = false;
  const double x = xy[0].toDouble(&okX);
  const double y = xy[1].toDouble(&okY);
  if (!okX || !okY) return false;
  *out = flip(x, y);
  return true;
}

// "e,x,y [s,x,y] p0 p1 p2 p3 ..." (only the first spline of a ';'-separated list: dot draws one per
// edge unless edges are concentrated).
bool parseSpline(const QString& pos, const Flip& flip, LayoutEdge* edge) {
  const QString first = pos.section(QLatin1Char(';'), 0, 0);
  const QStringList tokens = first.split(QLatin1Char(' '), Qt::SkipEmptyParts);
  for (const QString& token : tokens) {
    QPointF p;
    if (token.startsWith(QLatin1String("e,"))) {
      if (!parsePoint(token.mid(2), flip, &p)) return false;
      edge->hasArrow = true;
      edge->arrowTip = p;
    } else if (token.startsWith(QLatin1String("s,"))) {
      continue;  // an arrow at the tail: we never ask for one
    } else {
      if (!parsePoint(token, flip, &p)) return false;
      edge->spline.append(p);
    }
  }
  return edge->spline.size() >= 4 && (edge->spline.size() - 1) % 3 == 0;
}

bool parseBox(const QString& bb, const Flip& flip, QRectF* out) {
  const QStringList v = bb.split(QLatin1Char(','));
  if (v.size() != 4) return false;
  bool ok[4];
  const double x0 = v[0].toDouble(&ok[0]), y0 = v[1].toDouble(&ok[1]);
  const double x1 = v[2].toDouble(&ok[2]), y1 = v[3].toDouble(&ok[3]);
  if (!(ok[0] && ok[1] && ok[2] && ok[3])) return false;
  *out = QRectF(flip(x0, y1), flip(x1, y0)).normalized();
  return true;
}

}  // namespace

const LayoutNode* GraphLayout::findNode(const QString& name) const {
  for (const LayoutNode& n : nodes)
    if (n.name == name) return &n;
  return nullptr;
}

bool parseGraphvizJson(const QByteArray& json, GraphLayout* layout, QString* error) {
  QJsonParseError parseError;
  const QJsonDocument doc = QJsonDocument::fromJson(json, &parseError);
  if (doc.isNull() || !doc.isObject()) {
    *error = QStringLiteral("Graphviz output is not JSON: %1").arg(parseError.errorString());
    return false;
  }
  const QJsonObject root = doc.object();
  const QStringList bb = root.value(QLatin1String("bb")).toString().split(QLatin1Char(','));
  if (bb.size() != 4) {
    *error = QStringLiteral("Graphviz output has no bounding box");
    return false;
  }
  const Flip flip{bb[3].toDouble()};
  GraphLayout out;
  parseBox(root.value(QLatin1String("bb")).toString(), flip, &out.bounds);

  const int subgraphs = root.value(QLatin1String("_subgraph_cnt")).toInt();
  const QJsonArray objects = root.value(QLatin1String("objects")).toArray();
  QList<QString> namesByGvid(objects.size());
  for (qsizetype i = 0; i < objects.size(); ++i) {
    const QJsonObject o = objects[i].toObject();
    const QString name = o.value(QLatin1String("name")).toString();
    namesByGvid[o.value(QLatin1String("_gvid")).toInt(int(i))] = name;
    if (i < subgraphs) {
      if (!name.startsWith(QLatin1String("cluster_"))) continue;
      LayoutCluster c;
      c.name = name.mid(8);
      if (parseBox(o.value(QLatin1String("bb")).toString(), flip, &c.rect)) out.clusters.append(c);
      continue;
    }
    LayoutNode n;
    n.name = name;
    if (!parsePoint(o.value(QLatin1String("pos")).toString(), flip, &n.center)) {
      *error = QStringLiteral("Graphviz output has no position for node '%1'").arg(name);
      return false;
    }
    n.size = QSizeF(o.value(QLatin1String("width")).toString().toDouble() * kPointsPerInch,
                    o.value(QLatin1String("height")).toString().toDouble() * kPointsPerInch);
    out.nodes.append(n);
  }

  const QJsonArray edges = root.value(QLatin1String("edges")).toArray();
  for (const QJsonValue& value : edges) {
    const QJsonObject o = value.toObject();
    LayoutEdge e;
    e.id = o.value(QLatin1String("id")).toString();
    const int tail = o.value(QLatin1String("tail")).toInt(-1);
    const int head = o.value(QLatin1String("head")).toInt(-1);
    if (tail < 0 || head < 0 || tail >= namesByGvid.size() || head >= namesByGvid.size()) {
      *error = QStringLiteral("Graphviz output has an edge with unknown ends");
      return false;
    }
    e.tail = namesByGvid[tail];
    e.head = namesByGvid[head];
    if (!parseSpline(o.value(QLatin1String("pos")).toString(), flip, &e)) {
      *error =
          QStringLiteral("Graphviz output has no spline for edge %1 -> %2").arg(e.tail, e.head);
      return false;
    }
    e.hasLabel = parsePoint(o.value(QLatin1String("lp")).toString(), flip, &e.labelCenter);
    out.edges.append(e);
  }
  *layout = std::move(out);
  return true;
}

}  // namespace unity::views
