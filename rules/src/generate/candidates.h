#pragma once
// Candidate rules from one family's fingerprint classes. In a class (graphs computing the same
// parallel tensor), a rule between two graphs that are both larger than the class's smallest ones is
// implied by the two rules through a smallest one, so only pairs with a smallest graph are proposed.
// A pair is dropped when source and target share a subgraph (the rule with that subgraph as an input
// is smaller) or apply the same outer operator to equivalent inputs (the rule between those inputs
// implies it), or when the target reads an input the source does not.
#include <cstdint>
#include <vector>

#include "enumerator.h"

namespace unity::rules::gen {

struct Candidate {
  int source = 0;  // indices into Enumeration::graphs
  int target = 0;
};

struct CandidateStats {
  std::int64_t classes = 0, proposed = 0, pruned_common = 0;
};

std::vector<Candidate> candidates(const Enumeration& e, CandidateStats& stats);

}  // namespace unity::rules::gen
