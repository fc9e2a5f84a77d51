#pragma once
#include "unity/core/graph.h"

namespace unity {

// The data-parallel PCG of a serial model on `degree` devices: every input whose leading dim is the
// batch is partitioned along it, every other input and every weight is replicated (so the weights'
// gradients are summed in the backward pass). Throws InputError when the batch does not divide.
Graph make_data_parallel(const Graph& serial, int degree);

}  // namespace unity
