#include "unity/views/pcg_display.h"

#include <QFontInfo>
#include <QFontMetricsF>
#include <QObject>

#include <algorithm>
#include <set>
#include <tuple>

#include "unity/views/display_format.h"

namespace unity::views {

namespace {

constexpr double kLineGap = 2;
constexpr double kBadgeRoom = 30;  // the ×N badge in the top right corner
constexpr double kMaxTitleWidth = 260;
constexpr double kPointsPerInch = 72;

QString qs(std::string_view s) { return QString::fromUtf8(s.data(), qsizetype(s.size())); }

QString dotEscape(const QString& s) {
  QString out;
  out.reserve(s.size());
  for (QChar c : s) {
    if (c == QLatin1Char('"') || c == QLatin1Char('\\')) out += QLatin1Char('\\');
    out += c;
  }
  return out;
}

// Text widths, cached: subtitles repeat ("Conv2D", "Replicate ×12"), and measuring is most of the
// cost of building a big display on the GUI thread.
class Measurer {
 public:
  explicit Measurer(const DisplayFonts& fonts) : title_(fonts.title), subtitle_(fonts.subtitle) {}
  double subtitleWidth(const QString& s) {
    auto it = subtitles_.find(s);
    if (it == subtitles_.end()) it = subtitles_.insert(s, subtitle_.horizontalAdvance(s));
    return *it;
  }
  // The title as drawn (elided in the middle when too wide) and its width.
  QString title(const QString& name, double* width) const {
    *width = title_.horizontalAdvance(name);
    if (*width <= kMaxTitleWidth) return name;
    *width = kMaxTitleWidth;
    return title_.elidedText(name, Qt::ElideMiddle, kMaxTitleWidth);
  }
  QSizeF size(double titleWidth, const QString& subtitle, bool badge) {
    const double width = std::max(titleWidth, subtitleWidth(subtitle)) + 2 * kNodePaddingX +
                         (badge ? kBadgeRoom : 0);
    const double height = title_.height() + kLineGap + subtitle_.height() + 2 * kNodePaddingY;
    return {std::ceil(width), std::ceil(height)};
  }

 private:
  QFontMetricsF title_;
  QFontMetricsF subtitle_;
  QHash<QString, double> subtitles_;
};

}  // namespace

const DisplayNode* DisplayGraph::find(const QString& key) const {
  const auto it = indexOf.find(key);
  return it == indexOf.end() ? nullptr : &nodes[*it];
}

DisplayFonts DisplayFonts::standard() {
  DisplayFonts f;
  f.title = QFont(QStringLiteral("Helvetica"));
  f.title.setPixelSize(12);
  f.title.setBold(true);
  f.subtitle = QFont(QStringLiteral("Helvetica"));
  f.subtitle.setPixelSize(11);
  f.edgeLabel = QFont(QStringLiteral("Helvetica"));
  f.edgeLabel.setPixelSize(10);
  return f;
}

QString operatorSubtitle(const Node& node) {
  const Attributes& a = node.op.attrs;
  // RMSNorm is a LayerNorm operator without the mean (rms = 1); engineers know it by its name.
  QString s = node.op.type == OpType::LayerNorm && a.get_int("rms", 0) != 0
                  ? QStringLiteral("RMSNorm")
                  : qs(to_string(node.op.type));
  switch (node.op.type) {
    case OpType::Partition:
    case OpType::Combine:
      s += QStringLiteral(" dim %1 ×%2").arg(a.get_int("dim", 0)).arg(a.get_int("degree", 1));
      break;
    case OpType::Replicate:
    case OpType::Reduce:
    case OpType::AllReduce:
    case OpType::Pipeline:
    case OpType::Batch:
      if (a.has("degree")) s += QStringLiteral(" ×%1").arg(a.get_int("degree", 1));
      break;
    default: {
      const std::string act = a.get_string("activation", "none");
      if (act != "none") s += QStringLiteral(" + %1").arg(QString::fromStdString(act));
      break;
    }
  }
  return s;
}

DisplayGraph buildDisplayGraph(const Graph& graph, const BlockGrouping& blocks,
                               const DisplayOptions& options, const DisplayFonts& fonts) {
  DisplayGraph d;
  const QHash<NodeId, bool> sourceSide = sourceSideNodes(graph);
  Measurer measure(fonts);
  QSet<int> collapsedShown;

  for (NodeId id : graph.topological_order()) {
    const Node& n = graph.node(id);
    const int block = blocks.blockOf.value(id, -1);
    const bool collapsed = block >= 0 && options.collapsed.contains(blocks.blocks[block].name);
    const bool heldValues = n.op.type == OpType::Weight || n.op.type == OpType::Constant;
    if (!options.showSources && sourceSide.value(id) && heldValues) continue;
    if (!options.showSources && sourceSide.value(id) && is_parallel_op(n.op.type)) {
      // A parallel operator on a weight: hidden with the weight (the consumer's properties show
      // it).
      bool onWeight = false;
      for (NodeId cur = id; !onWeight;) {
        const Node& c = graph.node(cur);
        if (c.op.type == OpType::Weight || c.op.type == OpType::Constant) onWeight = true;
        if (c.inputs.empty() || !is_parallel_op(c.op.type)) break;
        cur = c.inputs.front().node;
      }
      if (onWeight) continue;
    }
    if (collapsed) {
      const QString key = QStringLiteral("b%1").arg(block);
      d.keyOf.insert(id, key);
      if (collapsedShown.contains(block)) continue;
      collapsedShown.insert(block);
      const Block& b = blocks.blocks[block];
      DisplayNode node;
      node.kind = DisplayNode::Kind::Block;
      node.key = key;
      node.block = block;
      node.name = b.name;
      double titleWidth = 0;
      node.title = measure.title(b.name, &titleWidth);
      node.subtitle = b.parallelOps > 0 ? QObject::tr("%1 operators · %2 parallel")
                                              .arg(b.computeOps + b.parallelOps)
                                              .arg(b.parallelOps)
                                        : QObject::tr("%1 operators").arg(b.computeOps);
      node.category = b.parallelOps > 0 ? OpCategory::Parallel : OpCategory::Compute;
      // The badge says how many tasks the block's widest operator runs as.
      for (NodeId m : b.members)
        if (!sourceSide.value(m) && !graph.node(m).outputs.empty())
          node.tasks = std::max(node.tasks, int(graph.node(m).outputs.front().num_pieces()));
      node.size = measure.size(titleWidth, node.subtitle, node.tasks > 1);
      node.size.rwidth() += 8;  // the stacked-cards look
      node.size.rheight() += 6;
      d.indexOf.insert(key, int(d.nodes.size()));
      d.nodes.append(node);
      continue;
    }
    DisplayNode node;
    node.key = QStringLiteral("n%1").arg(id);
    node.node = id;
    node.block = block;
    node.name = QString::fromStdString(n.op.name);
    double titleWidth = 0;
    node.title = measure.title(node.name, &titleWidth);
    node.subtitle = operatorSubtitle(n);
    node.category = op_info(n.op.type).category;
    node.tasks = n.outputs.empty() ? 1 : int(n.outputs.front().num_pieces());
    node.size = measure.size(titleWidth, node.subtitle, node.tasks > 1);
    d.keyOf.insert(id, node.key);
    d.indexOf.insert(node.key, int(d.nodes.size()));
    d.nodes.append(node);
  }

  std::set<std::tuple<QString, QString, TensorRef>> seen;
  for (NodeId id : graph.topological_order()) {
    const Node& n = graph.node(id);
    const auto head = d.keyOf.find(id);
    if (head == d.keyOf.end()) continue;
    for (const TensorRef& in : n.inputs) {
      const auto tail = d.keyOf.find(in.node);
      if (tail == d.keyOf.end() || *tail == *head) continue;
      if (!seen.insert({*tail, *head, in}).second) continue;
      DisplayEdge e;
      e.key = QStringLiteral("e%1").arg(d.edges.size());
      e.tail = *tail;
      e.head = *head;
      e.tensor = in;
      e.label = formatShape(graph.shape(in));
      d.edges.append(e);
    }
  }
  for (qsizetype b = 0; b < blocks.blocks.size(); ++b)
    if (!options.collapsed.contains(blocks.blocks[b].name)) {
      bool shown = false;
      for (NodeId m : blocks.blocks[b].members) shown = shown || d.keyOf.contains(m);
      if (shown) d.expandedBlocks.append(int(b));
    }
  return d;
}

QByteArray displayToDot(const DisplayGraph& d, const BlockGrouping& blocks,
                        const DisplayFonts& fonts) {
  const QString family = dotEscape(QFontInfo(fonts.edgeLabel).family());
  QString dot;
  dot.reserve(d.nodes.size() * 64 + d.edges.size() * 64);
  dot += QStringLiteral("digraph pcg {\n");
  dot += QStringLiteral(
             "  graph [rankdir=TB, nodesep=0.3, ranksep=0.4, fontname=\"%1\", fontsize=%2];\n")
             .arg(family)
             .arg(fonts.title.pixelSize());
  dot += QStringLiteral("  node [shape=box, fixedsize=true, label=\"\"];\n");
  dot += QStringLiteral("  edge [fontname=\"%1\", fontsize=%2, arrowsize=0.7];\n")
             .arg(family)
             .arg(fonts.edgeLabel.pixelSize());
  auto nodeLine = [&](const DisplayNode& n) {
    return QStringLiteral("  %1 [width=%2, height=%3];\n")
        .arg(n.key)
        .arg(n.size.width() / kPointsPerInch, 0, 'f', 4)
        .arg(n.size.height() / kPointsPerInch, 0, 'f', 4);
  };
  QHash<int, QList<int>> members;
  for (qsizetype i = 0; i < d.nodes.size(); ++i) {
    const DisplayNode& n = d.nodes[i];
    if (n.kind == DisplayNode::Kind::Operator && n.block >= 0 && d.expandedBlocks.contains(n.block))
      members[n.block].append(int(i));
    else
      dot += nodeLine(n);
  }
  for (int b : d.expandedBlocks) {
    dot += QStringLiteral("  subgraph cluster_b%1 {\n    label=\"%2\"; labeljust=l; margin=10;\n")
               .arg(b)
               .arg(dotEscape(blocks.blocks[b].name));
    for (int i : members.value(b)) dot += QStringLiteral("  ") + nodeLine(d.nodes[i]);
    dot += QStringLiteral("  }\n");
  }
  for (const DisplayEdge& e : d.edges)
    dot += QStringLiteral("  %1 -> %2 [id=\"%3\", label=\"%4\"];\n")
               .arg(e.tail, e.head, e.key, dotEscape(e.label));
  dot += QStringLiteral("}\n");
  return dot.toUtf8();
}

}  // namespace unity::views
