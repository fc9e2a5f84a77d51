#pragma once
// The drawn PCG: one item per shown node, edge and expanded block, placed where the layout service
// put them. Overlays (selection, search highlights that fade, diff marks) change how items paint
// and never move them: the base layout stays fixed while a search runs (DESIGN.md).
#include <QColor>
#include <QElapsedTimer>
#include <QGraphicsScene>
#include <QHash>
#include <QSet>
#include <QTimer>

#include <memory>

#include "unity/views/block_grouping.h"
#include "unity/views/graph_layout.h"
#include "unity/views/pcg_display.h"

namespace unity::views {

class PcgNodeItem;
class PcgEdgeItem;
class PcgClusterItem;

// How a node differs from the same-named node of another plan (the compare view).
enum class NodeMark { None, Changed, OnlyHere };

class PcgScene : public QGraphicsScene {
  Q_OBJECT

 public:
  explicit PcgScene(QObject* parent = nullptr);

  // Replaces every item. `display` and `layout` must describe the same graph (same node keys).
  void setContent(const DisplayGraph& display, GraphLayoutPtr layout, const BlockGrouping& blocks,
                  const DisplayFonts& fonts);
  // The same in steps, so a big graph never holds the GUI thread: beginContent, then buildStep
  // until it returns true (each step adds at most maxItems items).
  void beginContent(const DisplayGraph& display, GraphLayoutPtr layout, const BlockGrouping& blocks,
                    const DisplayFonts& fonts);
  bool buildStep(int maxItems);
  bool building() const { return build_ != nullptr; }
  void clearContent();

  int nodeItemCount() const { return int(nodes_.size()); }
  int edgeItemCount() const { return int(edges_.size()); }
  int clusterItemCount() const { return int(clusters_.size()); }
  PcgNodeItem* nodeItem(const QString& key) const { return nodes_.value(key); }
  bool hasNode(const QString& key) const { return nodes_.contains(key); }
  QRectF nodeRect(const QString& key) const;  // in scene coordinates; empty when not drawn
  QList<QString> nodeKeys() const { return nodes_.keys(); }
  const DisplayFonts& fonts() const { return fonts_; }

  // Selection: one node key (empty: none); its edges are emphasised.
  void setSelectedKey(const QString& key);
  QString selectedKey() const { return selected_; }

  // Search overlays: a halo around `keys` that fades out over `fadeMs` (0: stays until cleared).
  void highlight(const QSet<QString>& keys, const QColor& color, int fadeMs);
  void clearHighlights();
  QSet<QString> highlightedKeys() const;
  // Strength in [0, 1] of a node's halo now, and its colour.
  double highlightStrength(const QString& key, QColor* color) const;

  // Diff marks of the compare view.
  void setMarks(const QHash<QString, NodeMark>& marks);
  NodeMark mark(const QString& key) const { return marks_.value(key, NodeMark::None); }

  // Found by the name search: drawn with a yellow underlay.
  void setFoundKeys(const QSet<QString>& keys);
  bool isFound(const QString& key) const { return found_.contains(key); }

 signals:
  void nodeClicked(const QString& key);
  void nodeDoubleClicked(const QString& key);
  void clusterHeaderClicked(int block);
  void backgroundClicked();

 protected:
  void mousePressEvent(QGraphicsSceneMouseEvent* event) override;

 private:
  struct Build {
    DisplayGraph display;
    GraphLayoutPtr layout;
    BlockGrouping blocks;
    QHash<QString, const LayoutNode*> placed;
    QHash<QString, const LayoutEdge*> edgeLayout;
    qsizetype nextCluster, nextNode, nextEdge;
  };
  struct Highlight {
    QColor color;
    qint64 startMs = 0;
    int fadeMs = 0;
  };
  void tick();

  DisplayFonts fonts_;
  std::unique_ptr<Build> build_;
  QHash<QString, PcgNodeItem*> nodes_;
  QList<PcgEdgeItem*> edges_;
  QList<PcgClusterItem*> clusters_;
  QHash<QString, QList<PcgEdgeItem*>> edgesOf_;
  QString selected_;
  QHash<QString, Highlight> highlights_;
  QHash<QString, NodeMark> marks_;
  QSet<QString> found_;
  QElapsedTimer clock_;
  QTimer fadeTimer_;
};

}  // namespace unity::views
