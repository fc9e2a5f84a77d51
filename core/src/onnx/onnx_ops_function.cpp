// Operators that ONNX itself defines as a function of other operators import as that function's
// body: ONNX's schema builds it for the node's attributes and inputs (which inputs are present,
// their types and shapes), and each body node is imported in turn under fresh value names, so it
// folds, fuses and trains as those operators do. NegativeLogLikelihoodLoss (class weights,
// ignore_index, reduction none/sum/mean) becomes GatherElements, Where and reductions;
// SoftmaxCrossEntropyLoss a LogSoftmax and that NegativeLogLikelihoodLoss, as training exports
// write them (torch's cross_entropy and nll_loss).
#include <fmt/format.h>
#include <onnx/defs/schema.h>

#include <map>

#include "onnx/constant_folding.h"
#include "onnx/onnx_op_mapping.h"
#include "unity/core/errors.h"

namespace unity::onnxio {
namespace {

// The node's inputs' types as the schema's builder reads them (element type and shape).
std::vector<::onnx::TypeProto> input_types(ImportContext& ctx, const ::onnx::NodeProto& node) {
  std::vector<::onnx::TypeProto> types;
  for (const auto& input : node.input()) {
    ::onnx::TypeProto t;
    if (!input.empty()) {
      auto* tensor = t.mutable_tensor_type();
      tensor->set_elem_type(ctx.elem_type(input));
      for (std::int64_t d : ctx.dims(input)) tensor->mutable_shape()->add_dim()->set_dim_value(d);
    }
    types.push_back(std::move(t));
  }
  return types;
}

void map_function(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t opset) {
  const auto* schema = ::onnx::OpSchemaRegistry::Schema(
      node.op_type(), static_cast<int>(std::min<std::int64_t>(opset, 1 << 30)));
  if (!schema || !schema->HasContextDependentFunction())
    unsupported_use(node, fmt::format("ONNX defines no function body for it at opset {}", opset));
  ::onnx::FunctionProto body;
  const ::onnx::FunctionBodyBuildContextImpl build(node, input_types(ctx, node));
  if (!schema->BuildContextDependentFunction(build, body))
    unsupported_use(node, "ONNX builds no function body for its attributes and inputs");
  // The body's formal inputs and outputs are the node's; its other values get fresh names.
  std::map<std::string, std::string> names;
  for (int i = 0; i < body.input_size(); ++i)
    names[body.input(i)] = i < node.input_size() ? node.input(i) : std::string();
  for (int i = 0; i < body.output_size(); ++i)
    if (i < node.output_size()) names[body.output(i)] = node.output(i);
  const std::string prefix = node_name(node) + "/";
  for (const auto& original : body.node()) {
    ::onnx::NodeProto n = original;
    n.set_name(prefix + (original.name().empty() ? original.op_type() : original.name()));
    // Attributes that refer to the node's (SoftmaxCrossEntropyLoss hands its reduction and
    // ignore_index to its NegativeLogLikelihoodLoss) take its values, or go when it has none.
    n.clear_attribute();
    for (const auto& attr : original.attribute()) {
      if (attr.ref_attr_name().empty()) {
        *n.add_attribute() = attr;
      } else if (const auto* given = find_attribute(node, attr.ref_attr_name())) {
        ::onnx::AttributeProto value = *given;
        value.set_name(attr.name());
        *n.add_attribute() = std::move(value);
      }
    }
    for (auto& input : *n.mutable_input()) {
      auto it = names.find(input);
      if (it != names.end()) input = it->second;
    }
    for (auto& output : *n.mutable_output()) {
      if (output.empty()) continue;
      auto it = names.find(output);
      if (it != names.end() && !it->second.empty()) {
        output = it->second;  // one of the node's own outputs
      } else {
        const std::string fresh = ctx.fresh_name(prefix + output);
        names[output] = fresh;
        output = fresh;
      }
    }
    import_node(ctx, n, opset);
  }
}

}  // namespace

static void register_function_ops(OnnxImports& table) {
  table["NegativeLogLikelihoodLoss"] = map_function;
  table["SoftmaxCrossEntropyLoss"] = map_function;
}

UNITY_REGISTER_ONNX_IMPORTS(register_function_ops)

}  // namespace unity::onnxio
