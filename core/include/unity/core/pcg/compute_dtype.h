#pragma once
// The dtype a model computes in: its floating weights and inputs (mixed-precision training keeps
// fp32 master weights beside them; the memory model counts those, the graph does not hold them).
#include "unity/core/pcg/graph.h"

namespace unity {

// The dtype of the model's floating weights (of its floating inputs when it has no weights);
// Float32 when it has neither.
DataType compute_dtype(const Graph& graph);
// Every floating Weight and Input becomes `dtype`, and shapes are inferred again, so every float
// activation follows.
void set_compute_dtype(Graph& graph, DataType dtype);

}  // namespace unity
