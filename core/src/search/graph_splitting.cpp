#include "unity/core/search/graph_splitting.h"

#include <algorithm>
#include <unordered_map>

#include <fmt/format.h>

#include "hashing.h"
#include "unity/core/mapping/mapping_cost.h"
#include "unity/core/rules/substitution.h"

namespace unity {
namespace {

// A cut's context: the operators (kind and shapes) of the `width` placed operators up to it.
// Repeated blocks cut at the same place of the block come out as equal pieces, which the search
// solves once.
std::uint64_t cut_context(const Graph& g, const std::vector<NodeId>& placed, int position,
                          int width) {
  detail::Hasher h;
  for (int i = std::max(0, position - width + 1); i <= position; ++i)
    detail::hash_operator(h, g.node(placed[i]));
  return h.value();
}

}  // namespace

std::vector<NodeId> cut_candidates(const Graph& g) {
  const PlacementGraph pg(g);
  const auto& placed = pg.placed();
  const std::size_t n = placed.size();
  std::unordered_map<NodeId, std::size_t> pos;
  for (std::size_t i = 0; i < n; ++i) pos[placed[i]] = i;
  // In topological order, every operator before i must reach i and i must reach every one after:
  // equivalently no edge jumps over i, and the operators before i have no other exit (nothing but i
  // is a sink among them) and those after no other entry.
  std::vector<std::size_t> reach(n, 0);  // farthest position an edge from at or before i goes to
  for (std::size_t i = 0; i < n; ++i) {
    reach[i] = i;
    for (NodeId s : pg.successors(placed[i])) reach[i] = std::max(reach[i], pos.at(s));
    if (i > 0) reach[i] = std::max(reach[i], reach[i - 1]);
  }
  // No operator after i without a predecessor (it would run beside, not after, i), none before i
  // without a successor.
  std::vector<bool> no_sink_before(n + 1, true), no_source_after(n + 1, true);
  for (std::size_t i = 0; i < n; ++i)
    no_sink_before[i + 1] = no_sink_before[i] && !pg.successors(placed[i]).empty();
  for (std::size_t i = n; i-- > 0;)
    no_source_after[i] = no_source_after[i + 1] && (i == 0 || !pg.predecessors(placed[i]).empty());
  std::vector<NodeId> out;
  for (std::size_t i = 0; i + 1 < n; ++i) {
    if (i > 0 && reach[i - 1] > i) continue;  // an edge from before i lands after it
    if (!no_sink_before[i] || !no_source_after[i + 1]) continue;
    const Node& node = g.node(placed[i]);
    if (node.outputs.size() != 1 || node.outputs[0].replica != 1) continue;
    // Everything after i must be reached from i: its successors' reach covers the rest only if
    // every later operator has a predecessor at or after i, which no_source_after and the jump
    // check give.
    out.push_back(placed[i]);
  }
  return out;
}

SplitPlan choose_cuts(const Graph& g, const RuleSet& rules, int min_size,
                      std::optional<RuleKind> kind) {
  SplitPlan plan;
  const PlacementGraph pg(g);
  const auto& placed = pg.placed();
  const int n = static_cast<int>(placed.size());
  if (min_size < 1 || n < 2 * min_size) {
    plan.segments.push_back(placed);
    return plan;
  }
  std::unordered_map<NodeId, int> pos;
  for (int i = 0; i < n; ++i) pos[placed[i]] = i;
  // Each match blocks the cuts after its first and before its last placed operator.
  std::vector<int> blocked(n + 1, 0);
  for (const auto& rule : rules.rules) {
    if (kind && rule.kind != *kind) continue;
    for (const auto& m : find_matches(g, rule)) {
      int lo = n, hi = -1;
      for (NodeId id : m.matched_nodes()) {
        const NodeId at = pg.is_placed(id) ? id : -1;
        if (at < 0) continue;
        lo = std::min(lo, pos.at(at));
        hi = std::max(hi, pos.at(at));
      }
      for (int i = lo; i < hi; ++i) ++blocked[i];
    }
  }
  std::vector<int> candidates;
  for (NodeId id : cut_candidates(g)) candidates.push_back(pos.at(id));

  int start = 0;  // first operator of the current piece
  std::uint64_t last_context = 0;
  auto context = [&](int p) { return cut_context(g, placed, p, min_size); };
  for (std::size_t c = 0; c < candidates.size();) {
    // Cut after position p: the piece holds start..p, the rest p+1..n-1.
    int best = -1;
    for (std::size_t j = c; j < candidates.size(); ++j) {
      const int p = candidates[j];
      const int size = p - start + 1, rest = n - p - 1;
      if (size < min_size) continue;
      if (rest < min_size) break;
      if (size > 2 * min_size && best >= 0) break;
      if (best < 0) {
        best = p;
        continue;
      }
      const bool fewer = blocked[p] < blocked[best];
      const bool same_place = blocked[p] == blocked[best] && context(p) == last_context &&
                              context(best) != last_context;
      if (fewer || same_place) best = p;
    }
    if (best < 0) break;
    plan.cuts.push_back(placed[best]);
    plan.blocked.push_back(blocked[best]);
    last_context = context(best);
    start = best + 1;
    while (c < candidates.size() && candidates[c] <= best) ++c;
  }
  start = 0;
  for (NodeId cut : plan.cuts) {
    const int p = pos.at(cut);
    plan.segments.emplace_back(placed.begin() + start, placed.begin() + p + 1);
    start = p + 1;
  }
  plan.segments.emplace_back(placed.begin() + start, placed.end());
  return plan;
}

std::vector<SegmentTemplate> cut_graph(const Graph& g, const SplitPlan& plan) {
  const PlacementGraph pg(g);
  std::vector<SegmentTemplate> out;
  for (std::size_t k = 0; k < plan.segments.size(); ++k) {
    SegmentTemplate t;
    t.body.name = fmt::format("{} piece {}", g.name, k + 1);
    t.body.batch_size = g.batch_size;
    const std::set<NodeId> members(plan.segments[k].begin(), plan.segments[k].end());
    // The sources (and parallel operators on them) the piece reads, then its operators.
    std::set<NodeId> needed;
    std::vector<NodeId> stack;
    for (NodeId m : members)
      for (const auto& in : g.node(m).inputs)
        if (!pg.is_placed(in.node)) stack.push_back(in.node);
    while (!stack.empty()) {
      const NodeId id = stack.back();
      stack.pop_back();
      if (!needed.insert(id).second) continue;
      for (const auto& in : g.node(id).inputs) stack.push_back(in.node);
    }
    const NodeId entering = k > 0 ? plan.cuts[k - 1] : -1;
    const NodeId input_id = g.next_id(), marker_id = g.next_id() + 1;
    t.entry_base = g.next_id() + 2;
    for (NodeId id : g.topological_order()) {
      if (!needed.count(id) && !members.count(id)) continue;
      const Node& n = g.node(id);
      std::vector<TensorRef> inputs = n.inputs;
      for (auto& in : inputs)
        if (in.node == entering) {
          if (t.boundary_input < 0) {
            const auto& s = g.node(entering).outputs.at(0);
            Operator op{OpType::Input,
                        {{"shape", s.sizes()}, {"dtype", std::string(to_string(s.dtype))}},
                        g.node(entering).op.name + ":in"};
            t.boundary_input = input_id;
            t.body.insert_unchecked(t.boundary_input, std::move(op), {});
          }
          in = {t.boundary_input, 0};
        }
      t.body.insert_unchecked(id, n.op, std::move(inputs));
      t.original.insert(id);
    }
    t.entering_producer = entering;
    if (k + 1 < plan.segments.size()) {
      t.leaving_producer = plan.cuts[k];
      Operator marker{OpType::Identity, {}, g.node(t.leaving_producer).op.name + ":out"};
      t.output_marker = marker_id;
      t.body.insert_unchecked(t.output_marker, std::move(marker), {{t.leaving_producer, 0}});
    }
    t.body.reserve_ids(t.entry_base + SegmentTemplate::kEntryIds);
    t.body.infer_shapes();
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace unity
