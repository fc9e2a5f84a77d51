#pragma once
// Shape inference on parallel shapes. Each operator states which dimensions it may be parallelised
// along and how degrees flow from inputs to outputs; anything else is rejected with a ShapeError
// that says which input, dimension and degree is wrong. The attribute reference for every operator
// is in docs/operators.md.
#include <vector>

#include "unity/core/pcg/operator.h"
#include "unity/core/shapes/parallel_tensor_shape.h"

namespace unity {

std::vector<ParallelTensorShape> infer_output_shapes(
    const Operator& op, const std::vector<ParallelTensorShape>& inputs);

}  // namespace unity
