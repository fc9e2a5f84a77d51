#pragma once
// Graph splitting (paper 5.3): a large PCG is cut into pieces at operators every path passes
// through, each piece searched on its own for every partitioning of the tensor crossing the cut.
// Cuts go where they block the fewest rule matches, with a minimum piece size (the paper's k,
// default 10).
#include <set>
#include <vector>

#include "unity/core/pcg/graph.h"
#include "unity/core/rules/rule.h"

namespace unity {

struct SplitPlan {
  std::vector<NodeId> cuts;                   // cut after these operators, in topological order
  std::vector<std::vector<NodeId>> segments;  // the placed operators of each piece
  std::vector<int> blocked;                   // rule matches each cut blocks
};

// Operators where a cut is possible: every other placed operator comes before or after it, no edge
// jumps over it, and it hands on one tensor without partial sums.
std::vector<NodeId> cut_candidates(const Graph& g);

// The cuts, or none when the graph has fewer than 2 * min_size placed operators. `rules` (filtered
// by `kind` when not empty) are matched once on `g` to count what each possible cut blocks.
SplitPlan choose_cuts(const Graph& g, const RuleSet& rules, int min_size,
                      std::optional<RuleKind> kind = std::nullopt);

// One piece as a graph of its own: its operators with their model ids, the sources they read, the
// tensor entering it as an Input node (`boundary_input`), and an Identity reading the tensor it
// hands on (`output_marker`). Nodes it adds get ids at or above the model's next id.
struct SegmentTemplate {
  Graph body;
  NodeId boundary_input = -1;     // -1: the first piece
  NodeId output_marker = -1;      // -1: the last piece
  NodeId entering_producer = -1;  // the model operator whose result enters (the previous cut)
  NodeId leaving_producer = -1;   // the model operator whose result leaves (this piece's cut)
  std::set<NodeId> original;      // model ids in `body`
  // Ids kept free for the nodes that hand the entering tensor in (the search freezes them, and
  // every starting point of the piece must give them the same ids).
  NodeId entry_base = -1;
  static constexpr int kEntryIds = 64;
};
std::vector<SegmentTemplate> cut_graph(const Graph& g, const SplitPlan& plan);

}  // namespace unity
