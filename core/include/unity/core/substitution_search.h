#pragma once
// Substitution selection (paper 5.1): TASO's cost-based backtracking search. A queue of candidate PCGs
// ordered by predicted iteration time; the best is taken off and every rule is applied at every match
// with every parameter value; candidates within alpha x the best so far go back on the queue, until the
// queue is empty or the budget is spent. Every candidate is costed by the machine-mapping DP.
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "unity/core/machine_mapping.h"
#include "unity/core/rule.h"
#include "unity/core/search_observer.h"

namespace unity {

struct AppliedSubstitution {
  std::string rule;
  std::vector<std::string> nodes;  // names of the matched nodes
  std::map<std::string, std::int64_t> parameters;
  bool pinned = false;
};

struct CandidateCost {
  double time = 0;       // predicted iteration time, seconds
  bool fits = true;      // in every device's memory
  double overflow = 0;   // peak memory / capacity when it does not fit
  MachineMapping mapping;
  // Plans that fit come first, then by time; plans that do not fit by how far they overflow.
  double key() const { return fits ? time : 1e9 + overflow; }
};

using CostFunction = std::function<CandidateCost(const Graph&)>;

struct SearchOptions {
  double alpha = 1.05;
  std::int64_t budget = 200;              // candidates costed
  std::vector<std::int64_t> degrees;      // values the rules' parameters may take
  std::set<std::string> vetoed;           // rules never applied
  std::string kind;                       // "" all rules, else "algebraic" or "parallel" only
  SearchObserver* observer = nullptr;
  const CancelFlag* cancel = nullptr;
};

struct SearchResult {
  Graph best;
  CandidateCost cost;
  std::vector<AppliedSubstitution> applied;
  std::int64_t candidates_evaluated = 0;
  std::string status;  // "completed", "budget", "cancelled"
};

// `seeds` are further starting points (e.g. the data-parallel PCG): the joint space contains them.
SearchResult substitution_search(const Graph& start, const std::vector<Graph>& seeds,
                                 const RuleSet& rules, const CostFunction& cost,
                                 const SearchOptions& options);

// Applies `rule` wherever it matches in `graph` (first parameter value that is valid), repeatedly,
// recording each application as pinned. Used for --pin.
Graph apply_everywhere(const Graph& graph, const Rule& rule, const std::vector<std::int64_t>& degrees,
                       std::vector<AppliedSubstitution>& applied);

}  // namespace unity
