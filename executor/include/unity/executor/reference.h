#pragma once
// The one-rank reference of a plan: the same PCG with every parallel operator removed (each reads
// through to its input), so every degree is 1. Parallelisation must not change what is computed, so
// a plan's losses and final weights must equal this graph's up to summation order (`unity run
// --check`).
#include "unity/core/pcg/graph.h"

namespace unity::executor {

Graph serial_reference(const Graph& pcg);

}  // namespace unity::executor
