#pragma once
// An operator for another batch. Importers resolve every size against the batch given (`unity
// import --batch 4`), so a Reshape, an Expand, a Split or a Resize may hold a size that is the
// batch, or the batch merged with other dims (nn.MultiheadAttention's [seq, batch * heads,
// head_dim]). A micro-batch, or a data-parallel copy's share of the batch, runs the same operators
// on fewer samples: their sizes follow the inputs that changed.
#include <vector>

#include "unity/core/pcg/operator.h"
#include "unity/core/shapes/parallel_tensor_shape.h"

namespace unity {

// `op` with its size attributes made to fit inputs `now` where they were `before` (the sizes of
// the same inputs, with the batch changed). A reshape's changed input dim passes its change to the
// output dim whose block of elements ends where its own does (the batch is outermost where it is
// merged with other dims). Throws ShapeError
// when no size fits (the node is then not runnable at that batch).
Operator rebatched_operator(const Operator& op, const std::vector<ParallelTensorShape>& before,
                            const std::vector<ParallelTensorShape>& now);

}  // namespace unity
