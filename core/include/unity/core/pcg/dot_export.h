#pragma once
// Graphviz DOT text for a PCG: compute operators green, parallel operators orange (the paper's
// colours), edges labelled with parallel shapes.
#include <string>

#include "unity/core/pcg/graph.h"

namespace unity {

std::string graph_to_dot(const Graph& graph);

}  // namespace unity
