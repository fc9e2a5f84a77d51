// Experts: the experts of one mixture-of-experts layer, E feed-forward networks of one shape
// (SwiGLU or GELU), each token run through the experts its router picked and their outputs summed
// with the router's weights (unity/core/ops/experts_kernels.h). The router itself is ordinary
// operators (a Linear to E scores, Softmax or Sigmoid, TopK, the picked weights scattered back
// into a [tokens, E] gate tensor), so that it imports and trains as PyTorch writes it. Its shape
// inference is shapes/shape_inference_experts.cpp, its work cost/task_work.cpp, its kernel the
// executor's ops/experts_ops.cpp; parallelism: tokens (data), experts (expert parallelism: each
// device runs its experts on every token routed to them, the outputs summed) and the FFN width
// (expert tensor parallelism).
#include "unity/core/ops/operator_definition.h"

namespace unity {

template <>
const OperatorDefinition& define_operator<OpType::Experts>() {
  static const OperatorDefinition d{
      {OpType::Experts, "Experts", OpCategory::Compute, 4, 5},
      {},
      {},
      "a mixture-of-experts layer's E experts (SwiGLU or GELU FFNs), each token through the "
      "top_k its gates pick, summed with the gates' weights",
      {}};
  return d;
}

}  // namespace unity
