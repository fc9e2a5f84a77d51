#pragma once
// Evaluates ONNX nodes whose inputs are all known at import time: Constant, the Shape arithmetic
// exporters emit around Reshape (Shape, Gather, Unsqueeze, Concat, Cast, Slice, integer
// Add/Mul/Div), ConstantOfShape, Range, and element-wise math on small constants. Shape needs only
// the input's sizes, which the importer knows for every activation, so dynamic-batch exports fold
// completely.
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "onnx/const_tensor.h"
#include "onnx/onnx_model_reader.h"

namespace unity::onnxio {

// Folding reads and writes these many elements at most; larger constants stay weights.
inline constexpr std::int64_t kMaxFoldElements = std::int64_t{1} << 22;

bool is_foldable_op(std::string_view op_type);
// Shape, Size and EyeLike: need only the sizes of their input (EyeLike also its element type, an
// onnx::TensorProto_DataType, for the output's when the node names none).
bool is_shape_query_op(std::string_view op_type);

ConstTensor fold_shape_query(const ::onnx::NodeProto& node, const std::vector<std::int64_t>& dims,
                             int elem_type);
// inputs[i] is null for an absent optional input. Returns nullopt when the result would be larger
// than kMaxFoldElements. Throws InputError (naming the node) for malformed nodes.
std::optional<std::vector<ConstTensor>> fold_node(const ::onnx::NodeProto& node,
                                                  const std::vector<const ConstTensor*>& inputs,
                                                  std::int64_t opset);

// The sizes of a Split's pieces along an axis of `extent`: its `split` attribute (before opset 13)
// or input (`split`, null when absent), else equal pieces (opset 18's num_outputs, else one per
// output), the last one smaller when the extent does not divide.
std::vector<std::int64_t> split_sizes(const ::onnx::NodeProto& node, std::int64_t extent,
                                      std::int64_t opset, const ConstTensor* split);

// Numpy broadcasting of two shapes; throws InputError when they do not broadcast.
std::vector<std::int64_t> broadcast_dims(const std::vector<std::int64_t>& a,
                                         const std::vector<std::int64_t>& b);
// Resolves an ONNX Reshape target: 0 copies the input dim (unless allowzero), -1 is inferred.
std::vector<std::int64_t> resolve_reshape(const std::vector<std::int64_t>& input,
                                          const std::vector<std::int64_t>& target, bool allow_zero);
// Axis in [0, rank) from a possibly negative ONNX axis; throws InputError when out of range.
int normalize_axis(std::int64_t axis, std::int64_t rank);
// Flatten's axis in [0, rank] (negative: counted back from rank); throws InputError outside.
int flatten_axis(std::int64_t axis, std::int64_t rank);
// Dims after ONNX Unsqueeze / Squeeze with these axes (Squeeze without axes drops every 1).
std::vector<std::int64_t> unsqueeze_dims(const std::vector<std::int64_t>& dims,
                                         const std::vector<std::int64_t>& axes);
std::vector<std::int64_t> squeeze_dims(const std::vector<std::int64_t>& dims,
                                       const std::vector<std::int64_t>& axes);

}  // namespace unity::onnxio
