#pragma once
// What the PCG view draws for a graph: which operators are shown (weights may be hidden, blocks may
// be collapsed into one node), their labels and sizes, the edges between what is shown with their
// parallel-shape labels, and the DOT text the layout service lays out. Built on the GUI thread (it
// is linear in the graph and needs the GUI's font metrics); no Graphviz here.
#include <QByteArray>
#include <QFont>
#include <QHash>
#include <QList>
#include <QSet>
#include <QSizeF>
#include <QString>

#include "unity/core/pcg/graph.h"
#include "unity/core/pcg/op_type.h"
#include "unity/views/block_grouping.h"

namespace unity::views {

// Room between a node's box and its text: the layout sizes boxes with it (pcg_display.cpp) and the
// painter places the text with it (pcg_items.cpp).
inline constexpr double kNodePaddingX = 10;
inline constexpr double kNodePaddingY = 6;

struct DisplayOptions {
  bool showSources = true;  // weights, inputs, and the parallel operators applied only to them
  QSet<QString> collapsed;  // names of blocks drawn as one node
};

struct DisplayNode {
  enum class Kind { Operator, Block };
  Kind kind = Kind::Operator;
  QString key;       // the DOT name: "n<id>" or "b<block index>"
  NodeId node = -1;  // Operator: the graph node
  int block = -1;    // Block: the block; Operator: the block it sits in (-1: none)
  QString title;     // operator or block name (elided for drawing; the full name is `name`)
  QString name;
  QString subtitle;  // "Partition dim 0 ×12", "14 operators · 3 parallel"
  OpCategory category = OpCategory::Compute;
  int tasks = 1;  // pieces of the output (degrees × replicas): the ×N badge
  QSizeF size;
};

struct DisplayEdge {
  QString key;  // "e<index>": the DOT id
  QString tail;
  QString head;
  TensorRef tensor;
  QString label;  // the tensor's parallel shape
};

struct DisplayGraph {
  QList<DisplayNode> nodes;
  QList<DisplayEdge> edges;
  QHash<QString, int> indexOf;  // node key -> index in nodes
  // Every graph node -> key of what shows it (itself, or its collapsed block). Absent: hidden.
  QHash<NodeId, QString> keyOf;
  QList<int> expandedBlocks;  // blocks drawn as clusters around their members

  const DisplayNode* find(const QString& key) const;
};

// The fonts the PCG is drawn with; sizes are measured with them.
struct DisplayFonts {
  QFont title;
  QFont subtitle;
  QFont edgeLabel;
  static DisplayFonts standard();
};

QString operatorSubtitle(const Node& node);

DisplayGraph buildDisplayGraph(const Graph& graph, const BlockGrouping& blocks,
                               const DisplayOptions& options, const DisplayFonts& fonts);

// DOT for the layout service: fixed-size boxes (we draw them), labelled edges, clusters for
// expanded blocks, top to bottom as the data flows.
QByteArray displayToDot(const DisplayGraph& display, const BlockGrouping& blocks,
                        const DisplayFonts& fonts);

}  // namespace unity::views
