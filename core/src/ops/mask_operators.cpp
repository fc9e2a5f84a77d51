// The mask operators: comparisons and logic make Bool masks, Where selects by one, Cast converts
// between floats, integers and masks. Their arithmetic is unity/core/ops/mask_kernels.h (the
// executor's host kernels and the rule evaluator run it), their shape inference
// shape_inference_mask.cpp (numpy broadcasting, as Add), their axioms axioms_mask.cpp and their
// rules rules/mask.json.
#include "unity/core/ops/operator_definition.h"

namespace unity {

#define UNITY_MASK_OPERATOR(op, min_inputs, max_inputs, summary)                              \
  template <>                                                                                 \
  const OperatorDefinition& define_operator<OpType::op>() {                                   \
    static const OperatorDefinition d{                                                        \
        {OpType::op, #op, OpCategory::Compute, min_inputs, max_inputs}, {}, {}, summary, {}}; \
    return d;                                                                                 \
  }

UNITY_MASK_OPERATOR(Compare, 1, 2,
                    "a Bool mask of a `comparison` (equal, less, greater, less_or_equal, "
                    "greater_or_equal) of two broadcast operands, or of x and the `scalar`")
UNITY_MASK_OPERATOR(Logical, 1, 2,
                    "a Bool mask of the `logic` (and, or, xor of two broadcast masks, not of one)")
UNITY_MASK_OPERATOR(Where, 1, 3,
                    "x where the condition holds, else y (broadcast; either may be a scalar "
                    "attribute `x` or `y`, a masked fill); gradients to x and y")
UNITY_MASK_OPERATOR(Cast, 1, 1,
                    "x as type `to` (float, integer or bool): integers truncate, bool is x != 0; "
                    "no gradient through an integer")

#undef UNITY_MASK_OPERATOR

}  // namespace unity
