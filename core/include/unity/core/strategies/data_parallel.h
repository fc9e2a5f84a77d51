#pragma once
#include <set>

#include "unity/core/pcg/graph.h"

namespace unity {

// The data-parallel PCG of a serial model on `degree` devices: every input whose leading dim is the
// batch is partitioned along it, every other input and every weight is replicated (so the weights'
// gradients are summed in the backward pass). An Expand that makes the batch dim out of parameters
// (ViT's class token) runs serially on what it reads, and its output is partitioned like the batch.
// Throws InputError when the batch does not divide.
Graph make_data_parallel(const Graph& serial, int degree);
// The same, with the inputs in `batched` partitioned along their leading dim whatever its size (a
// piece of a cut graph reads an activation whose leading dim need not be the batch).
Graph make_data_parallel(const Graph& serial, int degree, const std::set<NodeId>& batched);

// A model that computes its own loss sums over the batch (a ReduceSum or ReduceMean down to a 0-d
// loss): with the batch partitioned, each device holds a partial sum. Every operator whose output
// has more replicas than any of its inputs made such partial sums; where something other than a
// loss operator (which sums its partial losses itself) reads them (a mean's division, a weighted
// average), an AllReduce after it sums them and leaves every device a copy. Both data-parallel
// layouts (make_data_parallel and the expert strategies' mixed one) end with it.
void sum_partial_reductions(Graph& g);

}  // namespace unity
