#pragma once
// What must hold for every model a loader accepted: it validates, and its model JSON (what `unity
// import -o` writes) reads back as the same graph. Failing either is an internal error, not bad
// input, so these checks run outside the fuzzers' user-error handler.
#include <cstdio>
#include <cstdlib>

#include "unity/core/json_io.h"
#include "unity/core/pcg/dot_export.h"
#include "unity/core/pcg/graph.h"

namespace unity::fuzz {

inline void check_accepted_model(const Graph& graph) {
  graph.validate();
  const Graph again = graph_from_json(graph_to_json(graph));
  if (again.structural_hash() != graph.structural_hash()) {
    std::fprintf(stderr, "fuzz: an accepted model's JSON reads back as a different graph\n");
    std::abort();
  }
  (void)graph_to_dot(graph);  // `unity show --dot` of any accepted model
}

}  // namespace unity::fuzz
