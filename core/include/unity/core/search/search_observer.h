#pragma once
// What the search reports while it runs (for the explorer's live view and the project file), and
// how another thread stops it.
#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "unity/core/pcg/graph.h"

namespace unity {

struct SearchEvent {
  enum class Kind {
    Started,          // the search began; best_ms is the input graph's cost on one device
    CandidateCosted,  // a substitution produced a candidate and the mapping DP costed it
    NewBest,          // that candidate is the best so far
    Pruned,           // that candidate was worse than alpha x best, or a duplicate
    StepDone,         // one candidate was taken off the queue and expanded
    Finished,         // the search ended (completed, budget reached, or cancelled)
  };
  Kind kind = Kind::Started;
  std::int64_t step = 0;              // candidates expanded so far
  std::string rule;                   // the substitution applied (CandidateCosted/NewBest/Pruned)
  std::vector<NodeId> matched_nodes;  // where, in the parent candidate's node ids
  std::vector<std::string> matched_names;  // the same nodes' names (stable across candidates)
  std::map<std::string, std::int64_t> parameters;  // the rule's parameters (degrees, dims)
  double candidate_ms = 0;                         // the candidate's predicted iteration time
  double best_ms = 0;                              // best predicted iteration time so far
  // Whether that best plan fits in memory. Plans that fit rank before those that do not, so once a
  // best fits, best_ms only falls; before, it may rise to the first plan that fits.
  bool best_fits = true;
  double elapsed_seconds = 0;
  std::int64_t queue_size = 0;
  std::int64_t candidates_evaluated = 0;
  std::uint64_t candidate_hash = 0;  // structural hash of the candidate graph
  std::string status;                // Finished: "completed", "budget", "cancelled"
  // Large graphs are searched piece by piece (paper 5.3): which piece this event belongs to
  // (0-based; -1: the whole graph) out of how many, and the boundary partitioning the piece is
  // searched for.
  int segment = -1;
  int segments = 0;
  std::string boundary;
  // Which of a plan's searches this is ("joint search from the model", ...; empty: the only one).
  std::string phase;
};

const char* to_string(SearchEvent::Kind kind);

class SearchObserver {
 public:
  virtual ~SearchObserver() = default;
  // Called on the search's thread; keep it quick (the GUI queues, the project file batches).
  virtual void on_event(const SearchEvent& event) = 0;
};

// Set from any thread; the search checks it between candidates and returns its best plan so far.
using CancelFlag = std::atomic<bool>;

}  // namespace unity
