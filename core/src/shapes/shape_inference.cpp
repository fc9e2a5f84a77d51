#include "unity/core/shapes/shape_inference.h"
#include "unity/core/ops/index_operators.h"
#include "unity/core/ops/mask_kernels.h"

#include "shape_rules.h"
#include "unity/core/ops/operator_definition.h"
#include "unity/core/pcg/graph_builder.h"

namespace unity {
namespace shape_rules {

std::pair<std::int64_t, std::int64_t> pair_attr(const Operator& op, const char* name,
                                                std::vector<std::int64_t> fallback) {
  auto v = op.attrs.get_ints(name, fallback);
  if (v.size() == 1) v.push_back(v[0]);
  if (v.size() != 2) fail("attribute '{}' must have 2 values, got {}", name, v.size());
  return {v[0], v[1]};
}

void check_activation(const Operator& op) {
  if (op.attrs.has("activation")) activation_from_string(op.attrs.get_string("activation"));
}

}  // namespace shape_rules

std::vector<ParallelTensorShape> infer_output_shapes(const Operator& op,
                                                     const std::vector<ParallelTensorShape>& in) {
  using namespace shape_rules;
  const auto& info = op_info(op.type);
  const int n = static_cast<int>(in.size());
  if (n < info.min_inputs || n > info.max_inputs) {
    if (info.min_inputs == info.max_inputs) fail("takes {} inputs, got {}", info.min_inputs, n);
    fail("takes at least {} inputs, got {}", info.min_inputs, n);
  }
  for (int i = 0; i < n; ++i) {
    if (in[i].replica < 1) fail("input {} has replica degree {} (< 1)", i, in[i].replica);
    for (int d = 0; d < in[i].rank(); ++d)
      if (in[i].dims[d].degree < 1 || in[i].dims[d].size < 1)
        fail("input {} dim {} has size {} and degree {}", i, d, in[i].dims[d].size,
             in[i].dims[d].degree);
  }

  Shapes out;
  switch (op.type) {
    case OpType::Input:
    case OpType::Weight:
    case OpType::Constant:
      out = infer_source(op, in);
      break;
    case OpType::Linear:
    case OpType::MatMul:
    case OpType::BatchMatMul:
    case OpType::MultiHeadAttention:
      out = infer_dense(op, in);
      break;
    case OpType::Conv2D:
    case OpType::Pool2D:
    case OpType::ConvTranspose:
      out = infer_convolution(op, in);
      break;
    case OpType::BatchNorm:
    case OpType::LayerNorm:
      out = infer_normalization(op, in);
      break;
    case OpType::Embedding:
    case OpType::EmbeddingBag:
      out = infer_embedding(op, in);
      break;
    case OpType::Concat:
    case OpType::Split:
    case OpType::Reshape:
    case OpType::Flatten:
    case OpType::Transpose:
    case OpType::Expand:
      out = infer_layout(op, in);
      break;
    case OpType::Softmax:
    case OpType::ReduceSum:
    case OpType::ReduceMean:
    case OpType::Reduction:
    case OpType::SoftmaxCrossEntropy:
    case OpType::MSELoss:
      out = infer_reduction(op, in);
      break;
    case OpType::Resize:
      out = infer_resize(op, in);
      break;
    case OpType::Pad:
    case OpType::GatherND:
    case OpType::ScatterND:
      out = infer_pad_nd(op, in);
      break;
    case OpType::Experts:
      out = infer_experts(op, in);
      break;
    default:
      if (is_parallel_op(op.type))
        out = infer_parallel(op, in);
      else if (is_index_operator(op.type))
        out = infer_index(op, in);
      else if (is_mask_operator(op.type))
        out = infer_mask(op, in);
      else if (axis_function(op.type))
        out = infer_along_axis(op, in);
      else if (const auto infer = operator_definition(op.type).infer)
        out = infer(op, in);  // an operator described in its own file (core/src/ops/)
      else
        out = infer_elementwise(op, in);
  }

  // Every piece must be whole: a degree that does not divide its dimension cannot be laid out.
  for (std::size_t o = 0; o < out.size(); ++o)
    for (int d = 0; d < out[o].rank(); ++d)
      if (out[o].dims[d].size % out[o].dims[d].degree != 0)
        fail("output {} dim {} of size {} is not divisible by its degree {}", o, d,
             out[o].dims[d].size, out[o].dims[d].degree);
  return out;
}

}  // namespace unity
