#include "onnx/onnx_op_mapping.h"

#include <fmt/format.h>

#include "onnx/constant_folding.h"
#include "unity/core/errors.h"

namespace unity::onnxio {
namespace {

const std::map<std::string, OpHandler>& handlers() {
  static const std::map<std::string, OpHandler> table = [] {
    std::map<std::string, OpHandler> t;
    register_dense_ops(t);
    register_elementwise_ops(t);
    register_pointwise_ops(t);
    register_layout_ops(t);
    register_recurrent_ops(t);
    register_einsum_ops(t);
    register_control_flow_ops(t);
    register_resize_ops(t);
    register_grid_sample_ops(t);
    register_spectral_ops(t);
    register_random_ops(t);
    register_index_ops(t);
    register_mask_ops(t);
    register_arithmetic_ops(t);
    register_reduce_ops(t);
    register_rearrange_ops(t);
    register_function_ops(t);
    return t;
  }();
  return table;
}

}  // namespace

bool is_supported_op(const ::onnx::NodeProto& node) {
  return is_default_domain(node) && is_supported_op_type(node.op_type());
}

bool is_supported_op_type(std::string_view op) {
  return op == "Identity" || handlers().count(std::string(op)) != 0 || is_foldable_op(op);
}

void map_node(ImportContext& ctx, const ::onnx::NodeProto& node, std::int64_t opset) {
  auto it = handlers().find(node.op_type());
  if (it == handlers().end()) {
    // Only constant-computing ops get here: one of their inputs depends on the model's inputs.
    std::string computed;
    for (const auto& input : node.input()) {
      if (!input.empty() && ctx.is_tensor(input)) {
        computed = input;
        break;
      }
    }
    // Where the input's values are the output's shape (ConstantOfShape's shape, Range's bounds,
    // Tile's repeats), computing them makes the output's size depend on the model's data.
    const std::string& op = node.op_type();
    for (int slot = 0; slot < node.input_size(); ++slot) {
      const std::string& input = node.input(slot);
      const bool sets_shape =
          op == "ConstantOfShape" || op == "Range" || (op == "Tile" && slot == 1);
      if (sets_shape && !input.empty() && ctx.is_tensor(input)) {
        unsupported_use(node, fmt::format("input '{}' sets the output's shape and is computed from "
                                          "the model's inputs: a data-dependent output shape, "
                                          "which a static plan cannot lay out",
                                          input));
      }
    }
    unsupported_use(node,
                    fmt::format("supported only on constants, but input '{}' is computed from the "
                                "model's inputs",
                                computed));
  }
  it->second(ctx, node, opset);
}

void require_only_first_output(const ImportContext& ctx, const ::onnx::NodeProto& node) {
  for (int i = 1; i < node.output_size(); ++i) {
    const std::string& out = node.output(i);
    if (out.empty()) continue;
    if (!ctx.model().consumers(out).empty() || ctx.model().is_graph_output(out)) {
      unsupported_use(node,
                      fmt::format("its output #{} ('{}') is used, and Unity's operator has only "
                                  "the first output",
                                  i, out));
    }
  }
}

void unsupported_use(const ::onnx::NodeProto& node, const std::string& why) {
  throw InputError(fmt::format("{}: {}", describe_node(node), why));
}

// A constant input that sets the output's size.
std::int64_t size_constant(ImportContext& ctx, const ::onnx::NodeProto& node, int slot,
                           const char* what) {
  const std::string& value = input_name(node, slot);
  if (value.empty()) unsupported_use(node, fmt::format("the {} input is missing", what));
  if (!ctx.is_constant(value))
    unsupported_use(node, fmt::format("input '{}' ({}) sets the output's shape and is computed "
                                      "from the model's inputs: a data-dependent output shape, "
                                      "which a static plan cannot lay out",
                                      value, what));
  return static_cast<std::int64_t>(ctx.constant(value).as_double(0));
}

}  // namespace unity::onnxio
