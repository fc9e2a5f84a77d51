#pragma once
// A PCG on screen: toolbar (fit, zoom, weights, blocks, find, export), the canvas, and a minimap.
// Layouts run on the layout service; until a new one arrives the previous drawing stays, so
// toggling a block or the weights never blanks the view. The PCG, search and compare views all use
// it.
#include <QHash>
#include <QImage>
#include <QPointer>
#include <QWidget>

#include <memory>

#include "unity/core/pcg/graph.h"
#include "unity/views/block_grouping.h"
#include "unity/views/graph_layout.h"
#include "unity/views/pcg_display.h"
#include "unity/views/pcg_scene.h"

class QAction;
class QLabel;
class QLineEdit;
class QToolBar;

namespace unity::views {

class GraphCanvas;
class LayoutService;
class Minimap;

class GraphView : public QWidget {
  Q_OBJECT

 public:
  explicit GraphView(QWidget* parent = nullptr, LayoutService* service = nullptr);
  ~GraphView() override;

  // Shows `graph` (kept alive by the view). Weights are shown for small graphs, and blocks start
  // collapsed when the graph has too many operators to read at once; both can be toggled.
  void setGraph(std::shared_ptr<const Graph> graph);
  void clear();
  const Graph* graph() const { return graph_.get(); }
  std::shared_ptr<const Graph> graphPtr() const { return graph_; }
  const BlockGrouping& blocks() const { return blocks_; }
  const DisplayGraph& display() const { return shown_; }  // what the scene draws now
  const DisplayOptions& options() const { return options_; }
  bool layoutPending() const;  // a layout is requested, or its drawing is still being built
  const GraphLayout* layout() const { return layout_.get(); }
  QString statusText() const;

  void setShowSources(bool show);
  void setBlockCollapsed(const QString& block, bool collapsed);
  void collapseAllBlocks();
  void expandAllBlocks();

  // Selection by node id: a node inside a collapsed block expands it first. -1 clears.
  void selectNode(NodeId id);
  // The first node of that exact name, or -1 when there is none.
  NodeId nodeByName(const QString& name) const;
  NodeId selectedNode() const { return selectedNode_; }
  int selectedBlock() const { return selectedBlock_; }  // a collapsed block's index, or -1
  void centerOnNode(NodeId id);

  // Halo around the nodes (or the collapsed blocks holding them) that fades over fadeMs (0: stays).
  void highlightNodes(const QList<NodeId>& nodes, const QColor& color, int fadeMs);
  void clearHighlights();
  void setNodeMarks(const QHash<NodeId, NodeMark>& marks);

  // Name search: selects and centres the next node whose name contains `text` (case-insensitive);
  // returns how many nodes match.
  int find(const QString& text);

  // The whole graph at `scale` (1: one pixel per scene unit), capped to what an image can hold.
  QImage renderImage(double scale = 2.0) const;
  // PNG (full resolution) or SVG by the file's suffix; false with *error on failure.
  bool exportTo(const QString& path, QString* error) const;
  void exportWithDialog();
  // Puts the keyboard focus in the find field.
  void focusFind();

  GraphCanvas* canvas() const { return canvas_; }
  PcgScene* scene() const { return scene_; }
  Minimap* minimap() const { return minimap_; }
  QToolBar* toolBar() const { return toolBar_; }

 signals:
  void selectionChanged();  // the user or a call changed selectedNode()/selectedBlock()
  void layoutFinished();    // the scene shows the latest request
  void layoutFailed(const QString& message);
  void busyChanged(bool busy);

 protected:
  void resizeEvent(QResizeEvent* event) override;

 private:
  void relayout();
  void onLayoutReady(quint64 ticket, GraphLayoutPtr layout);
  void continueBuild();
  void finishBuild();
  void abandonBuild();
  void connectScene(PcgScene* scene);
  void onLayoutFailed(quint64 ticket, const QString& message);
  void onNodeClicked(const QString& key);
  void onNodeDoubleClicked(const QString& key);
  void applySelectionToScene();
  void applyFoundToScene();
  void placeOverlays();
  QString keyOf(NodeId id) const;

  LayoutService* service_;
  std::shared_ptr<const Graph> graph_;
  BlockGrouping blocks_;
  DisplayOptions options_;
  DisplayFonts fonts_;
  DisplayGraph requested_;
  DisplayGraph shown_;
  GraphLayoutPtr layout_;
  quint64 ticket_ = 0;
  bool firstLayout_ = true;
  // A re-layout keeps anchorAfter_ (new drawing) where anchorBefore_ (old drawing) was on screen.
  QString anchorBefore_;
  QString anchorAfter_;

  NodeId selectedNode_ = -1;
  int selectedBlock_ = -1;
  NodeId centerAfterLayout_ = -1;
  QHash<NodeId, NodeMark> marks_;
  QList<NodeId> found_;
  QString findText_;
  int findIndex_ = -1;

  QToolBar* toolBar_;
  QAction* sourcesAction_;
  QLineEdit* findEdit_;
  QLabel* findCount_;
  GraphCanvas* canvas_;
  PcgScene* scene_;               // what the canvas shows
  PcgScene* building_ = nullptr;  // the next drawing, built in steps
  DisplayGraph buildingDisplay_;
  GraphLayoutPtr buildingLayout_;
  Minimap* minimap_;
  QLabel* placeholder_;
  QLabel* status_;
};

}  // namespace unity::views
