// Operators imported from their definitions: an ONNX node of one of a definition's onnx_types
// becomes one node of that operator. A point-wise or along-axis operator's parameters are read
// from the ONNX attributes they name (a parameter at its default is left out of the node, so that
// rules match it as written), or its axis; an operator described in its own file (Det) takes the
// node's inputs as they are.
#include <fmt/format.h>

#include "onnx/constant_folding.h"
#include "onnx/onnx_op_mapping.h"
#include "unity/core/errors.h"
#include "unity/core/ops/operator_definition.h"

namespace unity::onnxio {
namespace {

void map_defined(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t opset) {
  const OperatorDefinition& d = *definition_for(node.op_type());
  Attributes attrs = parameters_of(node, d);
  if (d.along_axis && d.along_axis->onnx_axis_input) {
    const TensorRef x = ctx.tensor(node.input(0));
    const std::string& axis = input_name(node, 1);
    if (axis.empty()) unsupported_use(node, "it has no axis input");
    attrs.set("axis",
              std::int64_t{normalize_axis(static_cast<std::int64_t>(ctx.constant(axis).scalar()),
                                          static_cast<std::int64_t>(ctx.sizes(x).size()))});
    ctx.bind_tensor(node.output(0), ctx.add(d.info.type, attrs, {x}, node_name(node)));
    return;
  }
  if (d.along_axis && d.along_axis->onnx_fixed_axis) {
    const TensorRef x = ctx.tensor(node.input(0));
    const auto rank = static_cast<int>(ctx.sizes(x).size());
    const int axis = *d.along_axis->onnx_fixed_axis;
    if (axis >= rank)
      unsupported_use(node, fmt::format("its input has rank {}, it needs a dim {}", rank, axis));
    attrs.set("axis", std::int64_t{axis});
    ctx.bind_tensor(node.output(0), ctx.add(d.info.type, attrs, {x}, node_name(node)));
    return;
  }
  if (d.along_axis) {
    emit_along_axis(ctx, node, opset, d.info.type);
    return;
  }
  std::vector<TensorRef> inputs;
  for (const auto& input : node.input())
    if (!input.empty()) inputs.push_back(ctx.tensor(input));
  ctx.bind_tensor(node.output(0), ctx.add(d.info.type, attrs, inputs, node_name(node)));
}

}  // namespace

const OperatorDefinition* definition_for(std::string_view onnx_type) {
  for (const OperatorDefinition* d : operator_definitions())
    for (std::string_view t : d->onnx_types)
      if (t == onnx_type) return d;
  return nullptr;
}

Attributes parameters_of(const ::onnx::NodeProto& node, const OperatorDefinition& d) {
  Attributes attrs;
  for (const PointwiseParameter& p : declared_parameters(d.info.type)) {
    if (p.onnx_name.empty()) continue;
    const auto* attr = find_attribute(node, std::string(p.onnx_name));
    const double value = !attr ? p.default_value.value_or(0.0)
                         : attr->type() == ::onnx::AttributeProto::INT
                             ? static_cast<double>(attr->i())
                             : attr->f();
    // ONNX keeps float32 attributes: its default, read back, is the default.
    if (!p.default_value || static_cast<float>(value) != static_cast<float>(*p.default_value))
      attrs.set(std::string(p.name), value);
  }
  return attrs;
}

static void register_defined_ops(OnnxImports& table) {
  for (const OperatorDefinition* d : operator_definitions())
    for (std::string_view t : d->onnx_types) table[std::string(t)] = map_defined;
}

UNITY_REGISTER_ONNX_IMPORTS(register_defined_ops)

}  // namespace unity::onnxio
