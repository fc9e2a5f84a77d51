// The index operators: they pick, place or name positions along one axis (`axis`, default 0 for
// the gathers and scatters, -1 for TopK). Integer tensors (indices) flow in and out of them; the
// float results carry gradients, the indices none. Their shape inference, work, kernels and rules
// are written where each concern lives (shape_inference_index.cpp, task_work.cpp, the executor's
// ops/index_ops.cpp, the rule evaluator's kernels_index.cpp), the axis always whole (degree 1) and
// every other dim split alike on all inputs and outputs (docs/operators.md).
#include "unity/core/ops/operator_definition.h"

namespace unity {

#define UNITY_INDEX_OPERATOR(op, min_inputs, max_inputs, summary)                             \
  template <>                                                                                 \
  const OperatorDefinition& define_operator<OpType::op>() {                                   \
    static const OperatorDefinition d{                                                        \
        {OpType::op, #op, OpCategory::Compute, min_inputs, max_inputs}, {}, {}, summary, {}}; \
    return d;                                                                                 \
  }

UNITY_INDEX_OPERATOR(TopK, 1, 1,
                     "the k largest (or smallest) values along the axis and their int64 indices")
UNITY_INDEX_OPERATOR(GatherElements, 2, 2,
                     "y[..., i, ...] = data[..., indices[..., i, ...], ...] along the axis")
UNITY_INDEX_OPERATOR(ScatterElements, 3, 3,
                     "data with updates written (or added) at the indices along the axis")
UNITY_INDEX_OPERATOR(OneHot, 1, 1,
                     "int indices to one-hot float vectors of `depth` along a new axis")
UNITY_INDEX_OPERATOR(ArgMax, 1, 1, "the int64 index of the largest value along the axis")
UNITY_INDEX_OPERATOR(ArgMin, 1, 1, "the int64 index of the smallest value along the axis")

#undef UNITY_INDEX_OPERATOR

}  // namespace unity
