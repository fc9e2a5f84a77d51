#pragma once
// Repeated blocks of a model (BERT's encoder layers, ResNeXt's bottlenecks, Inception's mixed
// modules) found from the hierarchical operator names that zoo models, ONNX exports and the search
// all use
// ("encoder.3.attention", "/layer1/layer1.0/conv1/Conv", "layer1.0.conv1.weight.replicate"). The
// PCG view draws each block as a Graphviz cluster that collapses into one node. Presentation only:
// the grouping never changes the graph.
#include <QHash>
#include <QList>
#include <QString>

#include "unity/core/pcg/graph.h"

namespace unity::views {

struct Block {
  QString name;           // the shared name prefix ("encoder.3")
  QList<NodeId> members;  // in node id order, sources and their parallel operators included
  int computeOps = 0;
  int parallelOps = 0;  // parallel operators on activations (those on weights count as sources)
  int sourceOps = 0;    // weights, inputs, and parallel operators applied to them only
};

struct BlockGrouping {
  QList<Block> blocks;         // in order of their first member in topological order
  QHash<NodeId, int> blockOf;  // member -> index into blocks; absent: in no block

  int indexOf(const QString& name) const;
};

// Whether a node only carries a weight or input: a source, or a parallel operator all of whose
// inputs are such nodes (Replicate of a weight, Partition of the images). Indexed by node id.
QHash<NodeId, bool> sourceSideNodes(const Graph& graph);

// The prefix a name groups under: the shortest prefix ending in a numeric component that follows a
// named one ("encoder.3", "layer.0"), else the first component of a dotted name ("Mixed_5b"); empty
// for single-component names.
QString blockPrefix(const QString& name);

// Blocks with at least two operators that are not source-side, in graphs of at least 24 operators
// (smaller graphs get none). A weight joins the block of the operator it feeds when its own name
// does not place it in one; inputs are never in a block.
BlockGrouping groupBlocks(const Graph& graph);

}  // namespace unity::views
