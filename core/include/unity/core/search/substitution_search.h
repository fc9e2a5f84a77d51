#pragma once
// Substitution selection (paper 5.1): TASO's cost-based backtracking search. A queue of candidate
// PCGs ordered by predicted iteration time; the best is taken off and every rule is applied at
// every match with every parameter value; candidates within alpha x the best so far go back on the
// queue, until the queue is empty or the budget is spent. Every candidate is costed by the
// machine-mapping DP.
//
// A serial graph has thousands of successors with the ~1,750 generated rules, more than a budget
// of 200 costs. So an expansion costs `per_step` successors at a time, the rest waiting in the
// queue at their parent's cost: a better child is expanded first (the search goes deeper where it
// gains) and the parent's remaining successors come back when nothing better is left. Which
// successors come first is decided by `rank`, a cheap estimate without a mapping search, taken in
// turns with rule order.
#include <chrono>
#include <functional>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "unity/core/mapping/machine_mapping.h"
#include "unity/core/rules/rule.h"
#include "unity/core/search/search_observer.h"

namespace unity {

struct Match;

struct AppliedSubstitution {
  std::string rule;
  std::vector<std::string> nodes;  // names of the matched nodes
  std::map<std::string, std::int64_t> parameters;
  bool pinned = false;
};

// A rule, everywhere (node empty) or only at matches that include the node of that name.
struct RuleLocation {
  std::string rule;  // a rule name, or a shell pattern such as "mlp_*" (vetoes only)
  std::string node;
  bool is_pattern() const;
  bool names(const std::string& rule_name) const;
  bool covers(const std::string& rule_name, const std::vector<std::string>& matched) const;
};
// "RULE" or "RULE@NODE" (the form --pin and --veto take).
RuleLocation parse_rule_location(const std::string& text);
std::string to_string(const RuleLocation& location);

struct CandidateCost {
  double time = 0;      // predicted iteration time, seconds
  bool fits = true;     // in every device's memory
  double overflow = 0;  // peak memory / capacity when it does not fit
  MachineMapping mapping;
  // Plans that fit come first, then by time; plans that do not fit by how far they overflow.
  double key() const { return fits ? time : 1e9 + overflow; }
};

using CostFunction = std::function<CandidateCost(const Graph&)>;

struct SearchOptions {
  double alpha = 1.05;
  std::int64_t budget = 200;  // candidates costed
  // Candidates costed from one expansion before the search looks again at what is best: the rest
  // of the expansion waits in the queue behind every candidate at least as good as its parent, so
  // a budget smaller than one step's successors still reaches more than one step (0: budget / 4,
  // at least 8).
  std::int64_t per_step = 0;
  // A cheap estimate of a candidate (lower is more promising), by which an expansion's successors
  // are tried; none: in rule order.
  std::function<double(const Graph&)> rank;
  std::vector<std::int64_t> degrees;  // values the rules' degree parameters may take
  // > 0: a candidate with a tensor split into more pieces than this, or into a number of pieces
  // that does not divide it, is not costed (it cannot use the machine evenly).
  int devices = 0;
  std::vector<RuleLocation> vetoed;  // never applied (everywhere, or at a node)
  std::set<NodeId> frozen;           // nodes no substitution may match
  std::set<NodeId> pinned;           // nodes a pinned rule made: no algebraic rule undoes them
  std::optional<RuleKind> kind;      // only rules of this kind (none: every rule)
  SearchObserver* observer = nullptr;
  const CancelFlag* cancel = nullptr;
  // The search stops with the best so far once this passes (status "time limit"); none: no limit.
  std::optional<std::chrono::steady_clock::time_point> deadline;
  SearchEvent scope;  // segment fields copied into every event
  // Called for every costed candidate with the substitutions that led to it (the hierarchical
  // search keeps the best candidate for each partitioning of a piece's result, not only the best
  // overall).
  std::function<void(const Graph&, const CandidateCost&, const std::vector<AppliedSubstitution>&)>
      on_costed;
};

struct SearchResult {
  Graph best;
  CandidateCost cost;
  std::vector<AppliedSubstitution> applied;
  std::int64_t candidates_evaluated = 0;
  std::string status;  // "completed", "budget", "time limit", "cancelled"
};

// `seeds` are further starting points (e.g. the data-parallel PCG): the joint space contains them.
SearchResult substitution_search(const Graph& start, const std::vector<Graph>& seeds,
                                 const RuleSet& rules, const CostFunction& cost,
                                 const SearchOptions& options);

// Applies `rule` wherever it matches in `graph` (at matches covering `location`'s node when it
// names one), with the first parameter value that is valid, repeatedly, recording each application
// as pinned. Used for --pin. Matches touching nodes with ids at or above `fresh_from` (default: the
// graph's next id, i.e. nodes this call creates) are not taken, so a target that matches its own
// source is applied once.
Graph apply_everywhere(const Graph& graph, const Rule& rule, const RuleLocation& location,
                       const std::vector<std::int64_t>& degrees,
                       std::vector<AppliedSubstitution>& applied, NodeId fresh_from = -1);

// Whether `rule` still applies in `graph` somewhere `location` covers, on nodes with ids below
// `original_below` (the model's own nodes, which a pinned rule must have replaced).
bool matches_at(const Graph& graph, const Rule& rule, const RuleLocation& location,
                const std::vector<std::int64_t>& degrees,
                NodeId original_below = std::numeric_limits<NodeId>::max());

// Names of the matched nodes, in node-id order.
std::vector<std::string> matched_names(const Graph& graph, const Match& match);

}  // namespace unity
