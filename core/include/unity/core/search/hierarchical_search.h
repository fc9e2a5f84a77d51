#pragma once
// Unity's search (paper 5): substitution selection (5.1) over candidates costed by the
// machine-mapping DP with a cache shared between candidates (5.2), and, for large graphs, graph
// splitting (5.3): the graph is cut into pieces of at least `min_piece` operators; every piece is
// searched for each partitioning of the tensor entering it (replica degree 1), keeping its best
// graph for each partitioning of the tensor it hands on; a dynamic program over the cuts picks one
// partitioning per cut, and the chosen pieces are glued back into one PCG.
#include <string>
#include <vector>

#include "unity/core/cost/cost_model.h"
#include "unity/core/mapping/machine_mapping.h"
#include "unity/core/search/substitution_search.h"

namespace unity {

struct HierarchicalOptions {
  SearchOptions search;  // every substitution search: alpha, budget (each), degrees, vetoes, ...
  bool split = true;     // graph splitting (5.3)
  int min_piece = 10;    // the paper's k
  bool cache = true;     // share solved subgraphs between candidates (5.2)
  // With `cache`: subgraphs solved by earlier searches priced with the same cost model, such as
  // the joint search's for the sequential search's parallel phase (null: a fresh cache).
  MappingCache* shared_cache = nullptr;
  // Partitionings of a cut tensor searched: ranked by the best prefix handing them on plus the
  // piece's cost at its best start, those within `beam_slack` x the first one's piece cost of the
  // first, at most `beam` of them (a bound on the pieces x partitionings searches; 0: all).
  int beam = 4;
  double beam_slack = 0.5;
  // Starting points of a piece searched: those priced within this factor of the best start.
  double lineage_slack = 2.0;
  // A candidate where one of these still applies to nodes below `pinned_below` (the graph's own,
  // which the pins were applied to beforehand) is not returned.
  std::vector<RuleLocation> pins;
  NodeId pinned_below = std::numeric_limits<NodeId>::max();
  double memory_budget = 0;  // bytes per device (0: the machine's smallest device memory)
  std::vector<std::int64_t> seed_degrees;  // data-parallel starting points (empty: none)
  // Further starting points for a graph searched whole (not cut): complete PCGs of the same model,
  // such as the expert strategies.
  std::vector<Graph> whole_graph_starts;
};

struct HierarchicalResult {
  Graph best;
  std::vector<AppliedSubstitution> applied;
  std::int64_t candidates_evaluated = 0;
  std::string status;  // completed, budget, cancelled
  int pieces = 1;
  int searches = 0;  // substitution searches run (pieces x partitionings, minus reuse)
  int reused = 0;    // piece searches answered by an equal piece searched before
  std::size_t cache_entries = 0;
};

HierarchicalResult hierarchical_search(const Graph& g, const RuleSet& rules, const CostModel& model,
                                       const HierarchicalOptions& options);

}  // namespace unity
