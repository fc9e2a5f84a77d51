// Pad, GatherND and ScatterND: the definitions. Their arithmetic is unity/core/ops/pad_kernels.h
// (the executor's host kernels and the rule evaluator run it), their shape inference
// shape_inference_pad.cpp, Pad's and GatherND's axioms axioms_pad.cpp and their rules
// rules/pad.json.
#include "unity/core/ops/operator_definition.h"

namespace unity {

#define UNITY_PAD_ND_OPERATOR(op, min_inputs, max_inputs, summary)                            \
  template <>                                                                                 \
  const OperatorDefinition& define_operator<OpType::op>() {                                   \
    static const OperatorDefinition d{                                                        \
        {OpType::op, #op, OpCategory::Compute, min_inputs, max_inputs}, {}, {}, summary, {}}; \
    return d;                                                                                 \
  }

UNITY_PAD_ND_OPERATOR(Pad, 1, 1,
                      "x with `pads` elements added (or cropped) at both ends of each dim: a "
                      "constant, the edge value or the reflection")
UNITY_PAD_ND_OPERATOR(GatherND, 2, 2,
                      "y[j..., :] = data[batch..., indices[j..., :], ...]: slices of data picked "
                      "by index tuples")
UNITY_PAD_ND_OPERATOR(ScatterND, 3, 3,
                      "data with the slices of updates written (or added) at the index tuples")

#undef UNITY_PAD_ND_OPERATOR

}  // namespace unity
