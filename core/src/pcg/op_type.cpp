#include "unity/core/pcg/op_type.h"

#include <array>

namespace unity {
namespace {

using C = OpCategory;
constexpr int kAny = 1 << 20;  // variadic (Concat)

constexpr std::array kOps{
    OpInfo{OpType::Input, "Input", C::Source, 0, 0},
    OpInfo{OpType::Weight, "Weight", C::Source, 0, 0},
    OpInfo{OpType::Linear, "Linear", C::Compute, 2, 3},
    OpInfo{OpType::MatMul, "MatMul", C::Compute, 2, 2},
    OpInfo{OpType::BatchMatMul, "BatchMatMul", C::Compute, 2, 2},
    OpInfo{OpType::Conv2D, "Conv2D", C::Compute, 2, 3},
    OpInfo{OpType::Pool2D, "Pool2D", C::Compute, 1, 1},
    OpInfo{OpType::BatchNorm, "BatchNorm", C::Compute, 3, 3},
    OpInfo{OpType::LayerNorm, "LayerNorm", C::Compute, 1, 3},
    OpInfo{OpType::MultiHeadAttention, "MultiHeadAttention", C::Compute, 7, 7},
    OpInfo{OpType::Embedding, "Embedding", C::Compute, 2, 2},
    OpInfo{OpType::EmbeddingBag, "EmbeddingBag", C::Compute, 2, 2},
    OpInfo{OpType::Relu, "Relu", C::Compute, 1, 1},
    OpInfo{OpType::Gelu, "Gelu", C::Compute, 1, 1},
    OpInfo{OpType::Sigmoid, "Sigmoid", C::Compute, 1, 1},
    OpInfo{OpType::Tanh, "Tanh", C::Compute, 1, 1},
    OpInfo{OpType::Exp, "Exp", C::Compute, 1, 1},
    OpInfo{OpType::Sqrt, "Sqrt", C::Compute, 1, 1},
    OpInfo{OpType::Erf, "Erf", C::Compute, 1, 1},
    OpInfo{OpType::Identity, "Identity", C::Compute, 1, 1},
    OpInfo{OpType::ScalarAdd, "ScalarAdd", C::Compute, 1, 1},
    OpInfo{OpType::ScalarMul, "ScalarMul", C::Compute, 1, 1},
    OpInfo{OpType::Pow, "Pow", C::Compute, 1, 1},
    OpInfo{OpType::Dropout, "Dropout", C::Compute, 1, 1},
    OpInfo{OpType::Add, "Add", C::Compute, 2, 2},
    OpInfo{OpType::Sub, "Sub", C::Compute, 2, 2},
    OpInfo{OpType::Mul, "Mul", C::Compute, 2, 2},
    OpInfo{OpType::Div, "Div", C::Compute, 2, 2},
    OpInfo{OpType::Concat, "Concat", C::Compute, 1, kAny},
    OpInfo{OpType::Split, "Split", C::Compute, 1, 1},
    OpInfo{OpType::Reshape, "Reshape", C::Compute, 1, 1},
    OpInfo{OpType::Flatten, "Flatten", C::Compute, 1, 1},
    OpInfo{OpType::Transpose, "Transpose", C::Compute, 1, 1},
    OpInfo{OpType::Expand, "Expand", C::Compute, 1, 1},
    OpInfo{OpType::Softmax, "Softmax", C::Compute, 1, 1},
    OpInfo{OpType::ReduceSum, "ReduceSum", C::Compute, 1, 1},
    OpInfo{OpType::ReduceMean, "ReduceMean", C::Compute, 1, 1},
    OpInfo{OpType::SoftmaxCrossEntropy, "SoftmaxCrossEntropy", C::Compute, 2, 2},
    OpInfo{OpType::MSELoss, "MSELoss", C::Compute, 2, 2},
    OpInfo{OpType::Partition, "Partition", C::Parallel, 1, 1},
    OpInfo{OpType::Combine, "Combine", C::Parallel, 1, 1},
    OpInfo{OpType::Replicate, "Replicate", C::Parallel, 1, 1},
    OpInfo{OpType::Reduce, "Reduce", C::Parallel, 1, 1},
    OpInfo{OpType::Pipeline, "Pipeline", C::Parallel, 1, 1},
    OpInfo{OpType::Batch, "Batch", C::Parallel, 1, 1},
    OpInfo{OpType::AllReduce, "AllReduce", C::Parallel, 1, 1},
};

// The table is indexed by the enum value: keep both in the same order.
constexpr bool table_matches_enum() {
  for (std::size_t i = 0; i < kOps.size(); ++i)
    if (static_cast<std::size_t>(kOps[i].type) != i) return false;
  return true;
}
static_assert(table_matches_enum(), "kOps must list OpType values in declaration order");

}  // namespace

const OpInfo& op_info(OpType type) { return kOps[static_cast<std::size_t>(type)]; }
std::span<const OpInfo> all_op_infos() { return kOps; }
std::string_view to_string(OpType type) { return op_info(type).name; }

std::optional<OpType> op_type_from_string(std::string_view name) {
  for (const auto& info : kOps)
    if (info.name == name) return info.type;
  return std::nullopt;
}

bool is_elementwise_unary(OpType t) {
  switch (t) {
    case OpType::Relu:
    case OpType::Gelu:
    case OpType::Sigmoid:
    case OpType::Tanh:
    case OpType::Exp:
    case OpType::Sqrt:
    case OpType::Erf:
    case OpType::Identity:
    case OpType::ScalarAdd:
    case OpType::ScalarMul:
    case OpType::Pow:
    case OpType::Dropout:
      return true;
    default:
      return false;
  }
}

bool is_elementwise_binary(OpType t) {
  return t == OpType::Add || t == OpType::Sub || t == OpType::Mul || t == OpType::Div;
}

}  // namespace unity
