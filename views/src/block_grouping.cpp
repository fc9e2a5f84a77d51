#include "unity/views/block_grouping.h"

#include <QStringList>

#include <map>

namespace unity::views {

namespace {
constexpr int kMinBlockOperators = 2;
constexpr int kMinGraphOperators = 24;

bool isNumber(const QString& s) {
  if (s.isEmpty()) return false;
  for (QChar c : s)
    if (!c.isDigit()) return false;
  return true;
}
}  // namespace

int BlockGrouping::indexOf(const QString& name) const {
  for (qsizetype i = 0; i < blocks.size(); ++i)
    if (blocks[i].name == name) return int(i);
  return -1;
}

QString blockPrefix(const QString& name) {
  // ONNX exports of PyTorch modules repeat each scope's parent in the next one
  // ("/layer1/layer1.0/conv1/Conv"): drop a segment that the next one starts with.
  QStringList segments = name.split(QLatin1Char('/'), Qt::SkipEmptyParts);
  for (qsizetype i = 0; i + 1 < segments.size();) {
    if (segments[i + 1].startsWith(segments[i] + QLatin1Char('.')))
      segments.removeAt(i);
    else
      ++i;
  }
  const QStringList parts =
      segments.join(QLatin1Char('.')).split(QLatin1Char('.'), Qt::SkipEmptyParts);
  for (qsizetype i = 1; i < parts.size(); ++i)
    if (isNumber(parts[i]) && !isNumber(parts[i - 1]))
      return parts.mid(0, i + 1).join(QLatin1Char('.'));
  if (parts.size() >= 2) return parts.first();
  return {};
}

QHash<NodeId, bool> sourceSideNodes(const Graph& graph) {
  QHash<NodeId, bool> side;
  for (NodeId id : graph.topological_order()) {
    const Node& n = graph.node(id);
    bool source = is_source_op(n.op.type);
    if (!source && is_parallel_op(n.op.type) && !n.inputs.empty()) {
      source = true;
      for (const TensorRef& in : n.inputs) source = source && side.value(in.node, false);
    }
    side.insert(id, source);
  }
  return side;
}

BlockGrouping groupBlocks(const Graph& graph) {
  const std::vector<NodeId> order = graph.topological_order();
  const QHash<NodeId, bool> sourceSide = sourceSideNodes(graph);
  // A graph this small reads best flat: boxes around two or three operators only add clutter.
  int graphOperators = 0;
  for (auto it = sourceSide.begin(); it != sourceSide.end(); ++it)
    graphOperators += it.value() ? 0 : 1;
  if (graphOperators < kMinGraphOperators) return {};

  // Prefixes by name; nodes named exactly like a prefix others use ("fc1" beside "fc1.rx") join it.
  std::map<NodeId, QString> prefix;
  QHash<QString, int> used;
  for (NodeId id : order) {
    if (graph.node(id).op.type == OpType::Input) continue;
    const QString p = blockPrefix(QString::fromStdString(graph.node(id).op.name));
    if (p.isEmpty()) continue;
    prefix[id] = p;
    ++used[p];
  }
  for (NodeId id : order) {
    const QString name = QString::fromStdString(graph.node(id).op.name);
    if (!prefix.count(id) && used.contains(name)) prefix[id] = name;
  }
  // Weights (and parallel operators on them) without a prefix follow the first operator they feed,
  // so they collapse with the layer that reads them. Inputs stay outside: they feed the whole
  // model.
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const NodeId id = *it;
    if (prefix.count(id) || !sourceSide.value(id) || graph.node(id).op.type == OpType::Input)
      continue;
    for (const Use& use : graph.uses(id)) {
      auto found = prefix.find(use.node);
      if (found != prefix.end()) {
        prefix[id] = found->second;
        break;
      }
    }
  }

  QHash<QString, int> operators;
  for (const auto& [id, p] : prefix)
    if (!sourceSide.value(id)) ++operators[p];

  BlockGrouping grouping;
  QHash<QString, int> index;
  for (NodeId id : order) {
    auto found = prefix.find(id);
    if (found == prefix.end() || operators.value(found->second) < kMinBlockOperators) continue;
    const QString& p = found->second;
    if (!index.contains(p)) {
      index.insert(p, int(grouping.blocks.size()));
      grouping.blocks.append(Block{p, {}, 0, 0, 0});
    }
    Block& b = grouping.blocks[index.value(p)];
    const OpType type = graph.node(id).op.type;
    if (sourceSide.value(id))
      ++b.sourceOps;
    else if (is_parallel_op(type))
      ++b.parallelOps;
    else
      ++b.computeOps;
    b.members.append(id);
    grouping.blockOf.insert(id, index.value(p));
  }
  for (Block& b : grouping.blocks) std::sort(b.members.begin(), b.members.end());
  return grouping;
}

}  // namespace unity::views
