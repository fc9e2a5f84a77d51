#pragma once
// ONNX operators -> operators of our PCG (docs/onnx.md has the table). Constants are folded before
// a node gets here; a node reaching map_node has at least one activation input.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "onnx/import_context.h"
#include "onnx/onnx_model_reader.h"
#include "unity/core/ops/operator_definition.h"

namespace unity::onnxio {

// True when the importer knows the operator (domain ai.onnx, mapped or foldable).
bool is_supported_op(const ::onnx::NodeProto& node);
// The same for an operator of the default domain, by its type.
bool is_supported_op_type(std::string_view op_type);
// Emits the node's operators and binds its outputs. Throws InputError naming the node when an
// attribute or input is outside what our operators can express.
void map_node(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t opset);

// Imports one node: an Identity alias, a folded constant, or map_node (onnx_import.cpp). Also
// used for the nodes of unrolled loops and the pieces of sequence operators.
void import_node(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t opset);

// A Conv node as Conv2D; `bias_value` (when not empty) replaces the node's own bias, which is how a
// following BatchNormalization is folded in.
TensorRef emit_conv2d(ImportContext& ctx, const ::onnx::NodeProto& conv,
                      const std::string& bias_value);

// Internal: the per-concept handler tables (onnx_ops_dense.cpp, onnx_ops_elementwise.cpp,
// onnx_ops_layout.cpp, onnx_ops_recurrent.cpp, onnx_ops_einsum.cpp).
using OpHandler = void (*)(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t opset);
void register_dense_ops(std::map<std::string, OpHandler>& table);
void register_elementwise_ops(std::map<std::string, OpHandler>& table);
// Softmax, LogSoftmax, ...: one node of `type` with the node's axis (before opset 13, over the
// dims from the axis on, flattened into one).
void emit_along_axis(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t opset,
                     OpType type);
// Every point-wise and along-axis operator definition's ONNX types (onnx_ops_pointwise.cpp).
void register_pointwise_ops(std::map<std::string, OpHandler>& table);
// The definition that imports ONNX type `onnx_type` one node for one node, or null.
const OperatorDefinition* definition_for(std::string_view onnx_type);
// The real parameters a node sets away from their defaults, as the definition names them (a
// parameter at its default is left out, so that rules match the node as written).
Attributes parameters_of(const ::onnx::NodeProto& node, const OperatorDefinition& d);
void register_layout_ops(std::map<std::string, OpHandler>& table);
void register_recurrent_ops(std::map<std::string, OpHandler>& table);
void register_einsum_ops(std::map<std::string, OpHandler>& table);
void register_control_flow_ops(std::map<std::string, OpHandler>& table);
// Resize and Upsample (onnx_ops_resize.cpp).
void register_resize_ops(std::map<std::string, OpHandler>& table);
// GridSample from Reshape, GatherElements and the weights' arithmetic (onnx_ops_grid_sample.cpp).
void register_grid_sample_ops(std::map<std::string, OpHandler>& table);
// DFT and STFT as a MatMul and a 1-D convolution with Constant matrices (onnx_ops_spectral.cpp).
void register_spectral_ops(std::map<std::string, OpHandler>& table);
// RandomNormal(Like), RandomUniform(Like) and Bernoulli as Random (onnx_ops_random.cpp).
void register_random_ops(std::map<std::string, OpHandler>& table);
// ReduceSum, ReduceMean and the other reductions (onnx_ops_reduce.cpp).
void register_reduce_ops(std::map<std::string, OpHandler>& table);
// TopK, GatherElements, ScatterElements, OneHot, ArgMax, ArgMin (onnx_ops_index.cpp).
void register_index_ops(std::map<std::string, OpHandler>& table);
// DepthToSpace, SpaceToDepth, Tile, Trilu and MeanVarianceNormalization of activations, from
// operators the PCG has (onnx_ops_rearrange.cpp).
void register_rearrange_ops(std::map<std::string, OpHandler>& table);
// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss as the bodies of the functions ONNX
// defines them by (onnx_ops_function.cpp).
void register_function_ops(std::map<std::string, OpHandler>& table);
// Comparisons, logic and Cast of activations (onnx_ops_mask.cpp).
void register_mask_ops(std::map<std::string, OpHandler>& table);
// Where as the Where operator: a condition computed from the model's inputs, or a constant one
// selecting between two activations (onnx_ops_mask.cpp).
void emit_where(ImportContext& ctx, const ::onnx::NodeProto& node);
// Max, Min, Sum, Mean, PRelu, Mod of activations, and Pow with a tensor exponent (emit_tensor_pow):
// the Arithmetic operator (onnx_ops_arithmetic.cpp).
void register_arithmetic_ops(std::map<std::string, OpHandler>& table);
void emit_tensor_pow(ImportContext& ctx, const ::onnx::NodeProto& node);
// Throws when an output beyond the first (BatchNorm statistics, Dropout mask, MaxPool indices...)
// is read by anything: our operators do not produce them.
void require_only_first_output(const ImportContext& ctx, const ::onnx::NodeProto& node);
[[noreturn]] void unsupported_use(const ::onnx::NodeProto& node, const std::string& why);
// The integer in input `slot`, which sets an output's size (TopK's k, STFT's frame step): refused
// with the node named when it is missing or computed from the model's inputs.
std::int64_t size_constant(ImportContext& ctx, const ::onnx::NodeProto& node, int slot,
                           const char* what);

}  // namespace unity::onnxio
