// The operators whose shape inference, work, kernels and rules are written where each concern
// lives (shapes/, cost/, the executor's ops/, the rule evaluator), from before operators had
// their own files. New operators get their own file instead (docs/operators.md).

#include "unity/core/ops/operator_definition.h"

namespace unity {
namespace {}  // namespace

#define UNITY_BUILTIN_OPERATOR(op, category, min_inputs, max_inputs)                      \
  template <>                                                                             \
  const OperatorDefinition& define_operator<OpType::op>() {                               \
    static const OperatorDefinition d{                                                    \
        {OpType::op, #op, OpCategory::category, min_inputs, max_inputs}, {}, {}, {}, {}}; \
    return d;                                                                             \
  }

UNITY_BUILTIN_OPERATOR(Input, Source, 0, 0)
UNITY_BUILTIN_OPERATOR(Weight, Source, 0, 0)
UNITY_BUILTIN_OPERATOR(Constant, Source, 0, 0)
UNITY_BUILTIN_OPERATOR(Linear, Compute, 2, 3)
UNITY_BUILTIN_OPERATOR(MatMul, Compute, 2, 2)
UNITY_BUILTIN_OPERATOR(BatchMatMul, Compute, 2, 2)
UNITY_BUILTIN_OPERATOR(Conv2D, Compute, 2, 3)
UNITY_BUILTIN_OPERATOR(Pool2D, Compute, 1, 1)
UNITY_BUILTIN_OPERATOR(BatchNorm, Compute, 3, 3)
UNITY_BUILTIN_OPERATOR(LayerNorm, Compute, 1, 3)
UNITY_BUILTIN_OPERATOR(MultiHeadAttention, Compute, 7, 7)
UNITY_BUILTIN_OPERATOR(Embedding, Compute, 2, 2)
UNITY_BUILTIN_OPERATOR(EmbeddingBag, Compute, 2, 2)
UNITY_BUILTIN_OPERATOR(Dropout, Compute, 1, 1)
UNITY_BUILTIN_OPERATOR(Add, Compute, 2, 2)
UNITY_BUILTIN_OPERATOR(Sub, Compute, 2, 2)
UNITY_BUILTIN_OPERATOR(Mul, Compute, 2, 2)
UNITY_BUILTIN_OPERATOR(Div, Compute, 2, 2)
UNITY_BUILTIN_OPERATOR(Concat, Compute, 1, kAnyInputs)
UNITY_BUILTIN_OPERATOR(Split, Compute, 1, 1)
UNITY_BUILTIN_OPERATOR(Reshape, Compute, 1, 1)
UNITY_BUILTIN_OPERATOR(Flatten, Compute, 1, 1)
UNITY_BUILTIN_OPERATOR(Transpose, Compute, 1, 1)
UNITY_BUILTIN_OPERATOR(Expand, Compute, 1, 1)
UNITY_BUILTIN_OPERATOR(Softmax, Compute, 1, 1)
UNITY_BUILTIN_OPERATOR(ReduceSum, Compute, 1, 1)
UNITY_BUILTIN_OPERATOR(ReduceMean, Compute, 1, 1)
UNITY_BUILTIN_OPERATOR(SoftmaxCrossEntropy, Compute, 2, 2)
UNITY_BUILTIN_OPERATOR(MSELoss, Compute, 2, 2)
UNITY_BUILTIN_OPERATOR(Partition, Parallel, 1, 1)
UNITY_BUILTIN_OPERATOR(Combine, Parallel, 1, 1)
UNITY_BUILTIN_OPERATOR(Replicate, Parallel, 1, 1)
UNITY_BUILTIN_OPERATOR(Reduce, Parallel, 1, 1)
UNITY_BUILTIN_OPERATOR(Pipeline, Parallel, 1, 1)
UNITY_BUILTIN_OPERATOR(Batch, Parallel, 1, 1)
UNITY_BUILTIN_OPERATOR(AllReduce, Parallel, 1, 1)
UNITY_BUILTIN_OPERATOR(ConvTranspose, Compute, 2, 3)

#undef UNITY_BUILTIN_OPERATOR

}  // namespace unity
