#pragma once
// A laid-out graph as plain values: what the layout service thread hands to the GUI (DESIGN.md: no
// Graphviz type ever crosses threads). Coordinates are scene pixels with y growing downwards; the
// parser flips Graphviz's y-up points.
#include <QByteArray>
#include <QList>
#include <QPointF>
#include <QRectF>
#include <QSizeF>
#include <QString>

#include <memory>

namespace unity::views {

struct LayoutNode {
  QString name;  // the DOT node name ("n12", "b3")
  QPointF center;
  QSizeF size;
  QRectF rect() const { return {center - QPointF(size.width() / 2, size.height() / 2), size}; }
};

struct LayoutEdge {
  QString id;  // the DOT edge's id attribute ("e7"), so parallel edges stay distinguishable
  QString tail;
  QString head;
  // Cubic bezier: the first point, then three points per segment (Graphviz's spline "pos").
  QList<QPointF> spline;
  bool hasArrow = false;  // the arrow tip at `arrowTip` (Graphviz clips the spline before it)
  QPointF arrowTip;
  bool hasLabel = false;
  QPointF labelCenter;
};

struct LayoutCluster {
  QString name;  // without the "cluster_" prefix
  QRectF rect;
};

struct GraphLayout {
  QRectF bounds;
  QList<LayoutNode> nodes;
  QList<LayoutEdge> edges;
  QList<LayoutCluster> clusters;
  double seconds = 0;        // wall time of the layout
  bool ranInProcess = true;  // false: laid out by a `dot` process

  const LayoutNode* findNode(const QString& name) const;
};

using GraphLayoutPtr = std::shared_ptr<const GraphLayout>;

// Parses Graphviz's "json0" output (`dot -Tjson0`, or gvRenderData(..., "json0")). Returns false
// with *error naming what is missing when the text is not a laid-out graph.
bool parseGraphvizJson(const QByteArray& json, GraphLayout* layout, QString* error);

}  // namespace unity::views
