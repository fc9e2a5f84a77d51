// Exporters cut one tensor into pieces with several Slice (or Gather) nodes, e.g. the packed q/k/v
// projection of attention. Each became its own Split during the import; here the Splits of one
// tensor along one axis become a single Split at the union of their boundaries, so the graph holds
// one Split with every piece used instead of several with unused remainders.
#include <algorithm>
#include <map>
#include <set>

#include "onnx/import_context.h"

namespace unity::onnxio {

void merge_slices(ImportContext& ctx) {
  Graph& graph = ctx.graph();
  std::map<std::pair<TensorRef, int>, std::vector<const SliceRecord*>> groups;
  for (const SliceRecord& record : ctx.slices()) {
    groups[{record.source, record.axis}].push_back(&record);
  }
  for (const auto& [key, members] : groups) {
    if (members.size() < 2) continue;
    const auto& [source, axis] = key;
    const std::int64_t size = graph.shape(source).sizes().at(static_cast<std::size_t>(axis));
    std::set<std::int64_t> bounds{0, size};
    for (const SliceRecord* m : members) {
      bounds.insert(m->start);
      bounds.insert(m->end);
    }
    const std::vector<std::int64_t> cuts(bounds.begin(), bounds.end());
    std::vector<std::int64_t> pieces;
    for (std::size_t i = 0; i + 1 < cuts.size(); ++i) pieces.push_back(cuts[i + 1] - cuts[i]);

    const NodeId merged =
        ctx.add_node(OpType::Split, {{"axis", std::int64_t{axis}}, {"sizes", pieces}}, {source},
                     members.front()->name);
    for (const SliceRecord* m : members) {
      const auto first = std::lower_bound(cuts.begin(), cuts.end(), m->start) - cuts.begin();
      const auto last = std::lower_bound(cuts.begin(), cuts.end(), m->end) - cuts.begin();
      TensorRef replacement{merged, static_cast<int>(first)};
      if (last - first > 1) {
        // A slice spanning several pieces of the union is their concatenation.
        std::vector<TensorRef> parts;
        for (auto p = first; p < last; ++p) parts.push_back({merged, static_cast<int>(p)});
        replacement =
            ctx.add(OpType::Concat, {{"axis", std::int64_t{axis}}}, parts, m->name + ".concat");
      }
      graph.replace_uses({m->split, m->piece_output}, replacement);
    }
    // The old Splits only fed the slices just rewired, so nothing reads them any more.
    for (const SliceRecord* m : members) {
      if (graph.contains(m->split) && graph.uses(m->split).empty()) graph.remove(m->split);
    }
    // Pieces of the union that no slice asked for stay unread; that is the same data the old
    // Splits left unread.
  }
}

}  // namespace unity::onnxio
