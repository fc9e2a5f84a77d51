#pragma once
// Every operator kind of the PCG. Compute operators are drawn green in the views, parallel
// operators (paper 3.3) orange; sources (Input, Weight) are tensors that enter the graph.
#include <optional>
#include <span>
#include <string_view>

namespace unity {

enum class OpType {
  // sources
  Input,
  Weight,
  // dense algebra
  Linear,
  MatMul,
  BatchMatMul,
  Conv2D,
  Pool2D,
  BatchNorm,
  LayerNorm,
  MultiHeadAttention,
  Embedding,
  EmbeddingBag,
  // element-wise unary
  Relu,
  Gelu,
  Sigmoid,
  Tanh,
  Exp,
  Sqrt,
  Erf,
  Identity,
  ScalarAdd,
  ScalarMul,
  Pow,
  Dropout,
  // element-wise binary (numpy broadcasting)
  Add,
  Sub,
  Mul,
  Div,
  // data movement
  Concat,
  Split,
  Reshape,
  Flatten,
  Transpose,
  Expand,
  Softmax,
  ReduceSum,
  ReduceMean,
  // losses
  SoftmaxCrossEntropy,
  MSELoss,
  // parallel operators (paper 3.3) and the fused form
  Partition,
  Combine,
  Replicate,
  Reduce,
  Pipeline,
  Batch,
  AllReduce,
};

enum class OpCategory { Source, Compute, Parallel };

struct OpInfo {
  OpType type;
  std::string_view name;
  OpCategory category;
  int min_inputs;
  int max_inputs;
};

const OpInfo& op_info(OpType type);
std::span<const OpInfo> all_op_infos();
std::string_view to_string(OpType type);
std::optional<OpType> op_type_from_string(std::string_view name);

inline bool is_parallel_op(OpType t) { return op_info(t).category == OpCategory::Parallel; }
inline bool is_source_op(OpType t) { return op_info(t).category == OpCategory::Source; }
inline bool is_compute_op(OpType t) { return op_info(t).category == OpCategory::Compute; }
bool is_elementwise_unary(OpType t);
bool is_elementwise_binary(OpType t);

}  // namespace unity
