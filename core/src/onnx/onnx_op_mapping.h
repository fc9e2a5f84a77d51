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

// How ONNX node types import. Each import file (onnx_ops_*.cpp) ends with
// UNITY_REGISTER_ONNX_IMPORTS(fn): `fn` puts its handlers, by ONNX type, into the table. The
// table is their union; two files importing one type stop the program at its first import. An
// operator's import is its own file and that line, with no list to edit (the library is linked
// whole: cmake/UnityWholeArchive.cmake).
using OpHandler = void (*)(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t opset);
using OnnxImports = std::map<std::string, OpHandler>;
struct OnnxImportRegistration {
  explicit OnnxImportRegistration(void (*add)(OnnxImports& table));
};
#define UNITY_ONNX_CONCAT_(a, b) a##b
#define UNITY_ONNX_CONCAT(a, b) UNITY_ONNX_CONCAT_(a, b)
#define UNITY_REGISTER_ONNX_IMPORTS(add)                                                     \
  namespace {                                                                                \
  const ::unity::onnxio::OnnxImportRegistration UNITY_ONNX_CONCAT(onnx_import_registration_, \
                                                                  __COUNTER__){add};         \
  }
// Softmax, LogSoftmax, ...: one node of `type` with the node's axis (before opset 13, over the
// dims from the axis on, flattened into one).
void emit_along_axis(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t opset,
                     OpType type);
// The definition that imports ONNX type `onnx_type` one node for one node, or null.
const OperatorDefinition* definition_for(std::string_view onnx_type);
// The real parameters a node sets away from their defaults, as the definition names them (a
// parameter at its default is left out, so that rules match the node as written).
Attributes parameters_of(const ::onnx::NodeProto& node, const OperatorDefinition& d);
// Where as the Where operator: a condition computed from the model's inputs, or a constant one
// selecting between two activations (onnx_ops_mask.cpp).
void emit_where(ImportContext& ctx, const ::onnx::NodeProto& node);
// Pow with a tensor exponent as Arithmetic's pow (onnx_ops_arithmetic.cpp).
void emit_tensor_pow(ImportContext& ctx, const ::onnx::NodeProto& node);
// Throws when an output beyond the first (BatchNorm statistics, Dropout mask, MaxPool indices...)
// is read by anything: our operators do not produce them.
void require_only_first_output(const ImportContext& ctx, const ::onnx::NodeProto& node);
[[noreturn]] void unsupported_use(const ::onnx::NodeProto& node, const std::string& why);
// The integer in input `slot`, which sets an output's size (TopK's k, STFT's frame step): refused
// with the node named when it is missing or computed from the model's inputs.
std::int64_t size_constant(ImportContext& ctx, const ::onnx::NodeProto& node, int slot,
                           const char* what);
// Refuses, naming the node, a constant the importer would build of `dims` (a DFT matrix, a
// resampling's taps) past the size it folds constants to (kMaxFoldElements).
void require_constant_size(const ::onnx::NodeProto& node, const char* what,
                           const std::vector<std::int64_t>& dims);

}  // namespace unity::onnxio
